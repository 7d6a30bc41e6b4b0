#!/usr/bin/env node
// npm `bin` of the operations CLI. Runs the esbuild bundle of bin/sqs-worker.ts (dist/cli/).
// - Installed package: the bundle ships in the package (`npm pack` builds it: the `prepack` script) and the
//   TypeScript sources of the CLI do not, so the bundle runs as it is.
// - This repository: `npm ci` builds it (the `prepare` script) and this shim rebuilds it when a source is newer
//   (~0.3 s, once); without esbuild (a production-only install) it runs the TypeScript sources through tsx, as
//   before the bundle (~1–2 s a command).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const BIN_DIR = fileURLToPath(new URL('.', import.meta.url));

if (!existsSync(join(BIN_DIR, 'sqs-worker.ts'))) {
  await import(pathToFileURL(join(BIN_DIR, '../dist/cli/sqs-worker.mjs')).href);
} else {
  const { buildCli, CLI_DIR, cliBundleIsFresh } = await import('../tools/build/build-cli.mjs');
  let bundled = cliBundleIsFresh();
  if (!bundled) {
    try {
      await buildCli();
      bundled = true;
    } catch (error) {
      if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    }
  }
  if (bundled) {
    await import(pathToFileURL(join(CLI_DIR, 'sqs-worker.mjs')).href);
  } else {
    const { register } = await import('tsx/esm/api');
    register();
    await import('./sqs-worker.ts');
  }
}
