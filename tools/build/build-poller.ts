// Bundles the poller (bin/poller.ts) for its container image: the Dockerfile's build stage runs
// `npx tsx tools/build/build-poller.ts [entry] [outdir]`. The esbuild settings are the Lambda functions'
// (lib/bundled-function.ts `bundleOptions`: ESM, minified, class names kept, linked source maps, the AWS SDK
// bundled, bowser stubbed), with the entry named `poller.mjs` and the target of the image's Node.js.
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BuildResult, build } from 'esbuild';
import { bundleOptions } from '../../lib/bundled-function.ts';
import { POLLER_NODE_TARGET } from '../../lib/runtimes/fargate/poller-node-target.ts';

/**
 * Bundles `entry` into `outdir/poller.mjs` (plus `chunks/` and source maps) with the project's esbuild settings.
 *
 * @internal
 */
export async function buildPoller(entry: string, outdir: string): Promise<BuildResult> {
  return build({
    ...bundleOptions(resolve(entry), resolve(outdir)),
    entryPoints: { poller: resolve(entry) },
    target: POLLER_NODE_TARGET,
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const [entry = 'bin/poller.ts', outdir = 'dist/poller'] = process.argv.slice(2);
  await buildPoller(entry, outdir);
  process.stderr.write(`poller: bundled ${entry} into ${outdir}/poller.mjs\n`);
}
