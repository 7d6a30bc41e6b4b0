import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { buildSync } from 'esbuild';
import { bundleOptions, PROJECT_ROOT } from '../../bundled-function.ts';
import { POLLER_NODE_TARGET } from './poller-node-target.ts';

/** The poller's process runner every poller main ends in (`bin/poller.ts` too). */
const RUN_POLLER_PROCESS = join(PROJECT_ROOT, 'lambda/runtimes/poller/run-poller-process.ts');

/**
 * The runtime stage of the project's `Dockerfile`, alone: the bundle is built at synth (here), so the image only
 * copies it onto Node.js. Same base, user, signal and command as the shipped image.
 */
const DOCKERFILE = `# syntax=docker/dockerfile:1
# The poller around your workerEntry, bundled at synth by SqsDatabaseWorker (lib/runtimes/fargate/poller-entry-image.ts):
# this folder is the bundle (poller.mjs, chunks/, source maps) and Node.js is all the image adds.
FROM node:20-bookworm-slim
ENV NODE_ENV=production \\
    NODE_OPTIONS=--enable-source-maps
WORKDIR /app
# Owned by root and read-only to the process: the task also runs with a read-only root file system.
COPY . /app/
USER node
STOPSIGNAL SIGTERM
CMD ["node", "poller.mjs"]
`;

/**
 * The source of a poller main around `entry`, a worker entry of your own (`workerEntry`): its `handlers` export
 * (the list its `createWorkerFromConfig({ handlers })` or `createDynamoWorkerFromConfig({ handlers })` deploys on
 * Lambda) run by the poller of `WORKER_STORE`, as `bin/poller.ts` runs the example domain's.
 *
 * @internal
 */
export function pollerMainSource(entry: string): string {
  return [
    '// The poller around a worker entry of your own: its `handlers` export, run as bin/poller.ts runs the example domain.',
    `import { runPollerProcess } from ${JSON.stringify(RUN_POLLER_PROCESS)};`,
    '',
    "// Loaded inside the runner: a variable its top level reads ends in one line and exit 2, as the poller's own.",
    'await runPollerProcess(',
    `  async () => (await import(${JSON.stringify(resolve(entry))})).handlers,`,
    `  ${JSON.stringify(basename(entry))},`,
    ');',
    '',
  ].join('\n');
}

/**
 * Writes {@link pollerMainSource} of `entry` into `dir` and returns the file's path (the entry to bundle).
 *
 * @internal
 */
export function writePollerMain(entry: string, dir: string): string {
  mkdirSync(dir, { recursive: true });
  const main = join(dir, 'poller-main.ts');
  writeFileSync(main, pollerMainSource(entry));
  return main;
}

/**
 * Builds the image context of the poller around `entry` (`workerEntry` with `runtime: 'fargate'`) in `dir`: the
 * main of {@link pollerMainSource} bundled at synth with the poller image's esbuild settings (`buildPoller`'s:
 * the Lambda functions' with Node.js 20) into `dir/image` — `poller.mjs`, its chunks and source maps — plus a
 * `Dockerfile` that copies them onto the shipped image's runtime stage. The example domain is not in it (the
 * main imports your entry, not `bin/poller.ts`), nor the other store's code when your entry imports one store's
 * subpath. Synchronous, as the Lambda runtime's local esbuild bundling, and without Docker: the image is built at
 * deploy from these files. `dir` is stable for a stack (under the assembly's folder), so the asset's hash changes
 * only with the code.
 *
 * `bundling` false (the stack is not bundled at this synth) skips esbuild.
 *
 * @throws Error when the entry has no `handlers` export or does not compile, naming the file and the fix.
 * @internal
 */
export function stagePollerImage(entry: string, dir: string, bundling = true): string {
  const image = join(dir, 'image');
  rmSync(image, { recursive: true, force: true });
  const main = writePollerMain(entry, join(dir, 'main'));
  mkdirSync(image, { recursive: true });
  // A stack the synth does not bundle (`cdk synth --exclusively` another one, tests): the context is the main
  // alone, as CDK stages an unbundled Lambda asset, never deployed.
  if (bundling) bundlePollerMain(entry, main, image);
  else writeFileSync(join(image, 'poller-main.ts'), pollerMainSource(entry));
  writeFileSync(join(image, 'Dockerfile'), DOCKERFILE);
  writeFileSync(join(image, '.dockerignore'), 'Dockerfile\n.dockerignore\n');
  return image;
}

/** A folder name for the image context of `entry` in `scope` (the construct's path, the entry's file name). @internal */
export function pollerImageFolder(uniqueId: string, entry: string): string {
  return `poller-image.${uniqueId}.${basename(entry).replace(/[^A-Za-z0-9_-]/g, '_')}`;
}

/** esbuild of the poller main `main` (around `entry`) into `image`, its failures as one line naming the fix. */
function bundlePollerMain(entry: string, main: string, image: string): void {
  let exports: string[] | undefined;
  try {
    const { metafile } = buildSync({
      ...bundleOptions(main, image),
      entryPoints: { poller: main },
      target: POLLER_NODE_TARGET,
      logLevel: 'silent',
      metafile: true,
    });
    // The entry is imported with import(): its own chunk, whose exports esbuild lists by their names.
    const chunk = Object.values(metafile.outputs).find(
      (output) => output.entryPoint !== undefined && resolve(output.entryPoint) === resolve(entry),
    );
    exports = chunk?.exports;
  } catch (error) {
    const errors = (error as { errors?: { text: string }[] }).errors ?? [];
    const reason = errors.length
      ? errors.map((problem) => problem.text).join('; ')
      : String((error as Error).message ?? error);
    throw new Error(
      `workerEntry ("${entry}") could not be bundled for the poller of runtime "fargate": ${reason}. Fix the module (it must build with esbuild, as for the Lambda runtime)`,
      { cause: error },
    );
  }
  if (exports && !exports.includes('handlers')) {
    throw new Error(
      `workerEntry ("${entry}") has no \`handlers\` export (it exports ${exports.length ? exports.join(', ') : 'nothing'}), which the poller of runtime "fargate" runs: export your handlers from it (\`export const handlers = [myHandler];\`, next to its \`handler\`)`,
    );
  }
}
