#!/usr/bin/env node
// npm `bin` of the operations CLI. Runs the esbuild bundle of bin/sqs-worker.ts (dist/cli/), which `npm ci` builds
// (the `prepare` script) and this shim rebuilds when a source is newer (~0.3 s, once); without esbuild (a
// production-only install) it runs the TypeScript sources through tsx, as before the bundle (~1–2 s a command).
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildCli, CLI_DIR, cliBundleIsFresh } from '../tools/build/build-cli.mjs';

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
