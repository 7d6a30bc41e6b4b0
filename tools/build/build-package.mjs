#!/usr/bin/env node
// `npm run build` (and `prepack`, so `npm pack` and `npm publish` always ship a fresh build): the compiled package.
// Plain JavaScript, like build-cli.mjs: it runs before anything is compiled.
//
// - dist/lambda/ and dist/lib/: every module of the two sides compiled by tsc (tsconfig.build.json: ESM for Node 20,
//   `.ts` import specifiers rewritten to `.js`) with its declaration (`.d.ts`), the targets of `exports`;
// - dist/cli/: the ops CLI bundle (build-cli.mjs), the target of the `sqs-worker` bin.
// The TypeScript sources of lambda/ and lib/ ship as well (package.json `files`): the construct bundles the Lambda
// entries from them at synth (docs/installed-package.md).
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildCli, CLI_DIR } from './build-cli.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The folders tsc writes, removed first so a deleted source leaves no stale module behind. */
const COMPILED = ['dist/lambda', 'dist/lib'];

/**
 * tsc keeps a `.ts` specifier of a type-only import as written in the declarations it emits (only runtime imports
 * are rewritten), and a declaration importing `./constants.ts` names a file the package does not have beside it.
 * Rewrites every relative `.ts` specifier of the declarations to `.js`, the file the declaration describes.
 */
function rewriteDeclarationSpecifiers(folder) {
  let rewritten = 0;
  for (const name of readdirSync(folder, { recursive: true, encoding: 'utf8' })) {
    if (!name.endsWith('.d.ts')) continue;
    const file = join(folder, name);
    const text = readFileSync(file, 'utf8');
    const next = text.replace(/((?:from|import\()\s*['"])(\.{1,2}\/[^'"]*?)\.ts(['"])/g, '$1$2.js$3');
    if (next !== text) {
      writeFileSync(file, next);
      rewritten += 1;
    }
  }
  return rewritten;
}

/**
 * Removes what earlier builds left in dist/cli/ (chunks are named by their content hash, so each change of the
 * sources adds new ones): the package ships the chunks of this build only. Not done by build-cli.mjs's own rebuilds,
 * where a CLI started before the rebuild may still load a chunk of its bundle.
 */
function removeStaleCliFiles(outputs) {
  const kept = new Set(outputs);
  let removed = 0;
  for (const name of readdirSync(CLI_DIR, { recursive: true, encoding: 'utf8' })) {
    const file = join(CLI_DIR, name);
    if (kept.has(file) || !statSync(file).isFile()) continue;
    rmSync(file);
    removed += 1;
  }
  return removed;
}

export async function buildPackage() {
  const started = performance.now();
  for (const folder of COMPILED) rmSync(join(ROOT, folder), { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const run = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (run.status !== 0)
    throw new Error(`tsc -p tsconfig.build.json failed (exit ${run.status ?? run.signal})`);
  const declarations = COMPILED.reduce(
    (sum, folder) => sum + rewriteDeclarationSpecifiers(join(ROOT, folder)),
    0,
  );
  const cli = await buildCli();
  const stale = removeStaleCliFiles(cli.outputs);
  return {
    seconds: (performance.now() - started) / 1000,
    declarations,
    cli: relative(ROOT, cli.entry),
    stale,
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { seconds, declarations, cli, stale } = await buildPackage();
  process.stderr.write(
    `build: dist/lambda, dist/lib (${declarations} declarations' .ts specifiers rewritten) and ${cli} (${stale} stale files of earlier builds removed) in ${seconds.toFixed(1)} s\n`,
  );
}
