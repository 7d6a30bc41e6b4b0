#!/usr/bin/env node
// Builds the operations CLI (bin/sqs-worker.ts) into dist/cli/ with the project's esbuild, so `sqs-worker` starts
// without compiling TypeScript at every run. Plain JavaScript: it runs before anything is compiled (the npm
// `prepare` script at `npm ci`, and bin/sqs-worker.js when a source is newer than the bundle).
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Folder of the bundle: `sqs-worker.mjs`, its `chunks/`, and `inputs.json` (the sources it was built from). */
export const CLI_DIR = join(ROOT, 'dist/cli');
/** What else makes a bundle stale: the dependencies it inlines. */
const ALSO_WATCHED = ['package.json', 'package-lock.json', 'tools/build/build-cli.mjs'];

/** Writes `file` through a temporary name and a rename, so a concurrent run never reads half a file. */
function writeAtomically(file, contents) {
  mkdirSync(dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(temporary, contents);
  renameSync(temporary, file);
}

/**
 * True when dist/cli holds a bundle at least as new as every project source it was built from (the list is in
 * `inputs.json`, written last: a few dozen `stat` calls).
 */
export function cliBundleIsFresh() {
  try {
    const built = statSync(join(CLI_DIR, 'inputs.json')).mtimeMs;
    const inputs = JSON.parse(readFileSync(join(CLI_DIR, 'inputs.json'), 'utf8'));
    return inputs.every((file) => statSync(join(ROOT, file)).mtimeMs <= built);
  } catch {
    return false;
  }
}

/**
 * Bundles bin/sqs-worker.ts: ESM for Node 20, every dependency inlined except what must stay a package, code
 * splitting so `--help` and `--version` load only commander (the commands' modules, the AWS SDK and postgres.js are
 * a chunk loaded when a command runs). Chunks are written before the entry and `inputs.json` last.
 */
export async function buildCli() {
  const { build } = await import('esbuild');
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: { 'sqs-worker': 'bin/sqs-worker.ts' },
    outdir: CLI_DIR,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunks/[name]-[hash]',
    minify: true,
    // Error classes name themselves after their constructor (postgres.js `PostgresError`): keep the names.
    keepNames: true,
    sourcemap: 'linked',
    sourcesContent: false,
    mainFields: ['module', 'main'],
    // The package's own entries resolve to their sources (lib/source-condition.ts), as in the functions' bundles.
    conditions: ['@sqs-inbox-worker/source', 'module'],
    alias: { bowser: join(ROOT, 'lib/bowser-stub.ts') },
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
    metafile: true,
    write: false,
    logLevel: 'warning',
  });
  const entry = join(CLI_DIR, 'sqs-worker.mjs');
  const files = [...result.outputFiles].sort((a, b) => Number(a.path === entry) - Number(b.path === entry));
  for (const file of files) writeAtomically(file.path, file.contents);
  const inputs = Object.keys(result.metafile.inputs).filter((file) => !file.includes('node_modules/'));
  writeAtomically(
    join(CLI_DIR, 'inputs.json'),
    `${JSON.stringify(
      [...inputs, ...ALSO_WATCHED].map((file) => relative(ROOT, join(ROOT, file))),
      null,
      1,
    )}\n`,
  );
  return {
    entry,
    inputs: inputs.length,
    outputs: [...files.map((file) => file.path), join(CLI_DIR, 'inputs.json')],
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    const { entry, inputs } = await buildCli();
    process.stderr.write(`sqs-worker: built ${relative(ROOT, entry)} from ${inputs} sources\n`);
  } catch (error) {
    // A production-only install has no esbuild: bin/sqs-worker.js then runs the TypeScript sources through tsx.
    if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    process.stderr.write(
      'sqs-worker: esbuild is not installed; the CLI will run from its TypeScript sources\n',
    );
  }
}
