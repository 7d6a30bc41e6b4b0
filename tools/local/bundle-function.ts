import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { bundleOptions } from '../../lib/bundled-function.ts';
import type { WorkerBundleProfile } from '../../lib/worker-bundle-profile.ts';

const RUNTIME = fileURLToPath(new URL('./function-runtime.ts', import.meta.url));

/**
 * Bundles a function's module for a local execution environment as the stack bundles it for Lambda (`bundleOptions`
 * of lib/bundled-function.ts: ESM, minified, code splitting, the worker's bundle `profile`), behind the local runtime
 * (`function-runtime.ts`) that serves the host's invocations: `outdir/index.mjs` is what the child runs. The module is
 * imported from the runtime with `import()`, so its init runs — and fails — where the runtime can time and report it.
 *
 * A bundle, not the TypeScript sources through tsx: what runs is the deployed code, and the environment's memory is
 * the deployed function's (tsx's loader thread and transformer add about 60 MB to a worker's 50 MB).
 *
 * @returns the path of the entry file to run.
 * @internal
 */
export async function bundleFunction(options: {
  /** Absolute path of the module (exports `handler`, or `handlers`). */
  readonly entry: string;
  /** An empty folder of the bundle's. */
  readonly outdir: string;
  readonly profile?: WorkerBundleProfile;
}): Promise<string> {
  const wrapper = join(options.outdir, 'local-runtime-entry.mjs');
  await writeFile(
    wrapper,
    [
      `import { serveInvocations } from ${JSON.stringify(RUNTIME)};`,
      `await serveInvocations(() => import(${JSON.stringify(options.entry)}));`,
      '',
    ].join('\n'),
  );
  await build({
    ...bundleOptions(wrapper, join(options.outdir, 'bundle'), options.profile),
    absWorkingDir: options.outdir,
    logLevel: 'silent',
  });
  return join(options.outdir, 'bundle', 'index.mjs');
}
