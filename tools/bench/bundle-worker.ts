import { mkdtemp, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { BUNDLING_OPTIONS, PROJECT_ROOT } from '../../lib/bundled-function.ts';

/** The worker bundle built by {@link bundleWorker}. */
export interface WorkerBundle {
  /** Absolute path of `index.mjs`. */
  readonly file: string;
  /** Size of `index.mjs` in bytes (the source map is a separate file, not loaded unless enabled). */
  readonly bytes: number;
  /** Size of `index.mjs.map` in bytes. */
  readonly mapBytes: number;
  /** Bytes in the output per npm package (or `(project)` for our own code), largest first. */
  readonly byPackage: { name: string; bytes: number }[];
}

/** The npm package a bundled input belongs to (its innermost `node_modules` folder), or `(project)`. */
export function packageOf(input: string): string {
  const at = input.lastIndexOf('node_modules/');
  if (at < 0) return '(project)';
  const [scope, name] = input.slice(at + 'node_modules/'.length).split('/');
  return scope?.startsWith('@') ? `${scope}/${name}` : (scope ?? '(project)');
}

/**
 * Bundles `lambda/handlers/worker.ts` with esbuild the way the CDK `NodejsFunction` of the stack does
 * (`BUNDLING_OPTIONS` of lib/bundled-function.ts: ESM, minified, its Node target, everything bundled
 * including the AWS SDK, the `require` banner, a linked source map), into a temp folder.
 */
export async function bundleWorker(): Promise<WorkerBundle> {
  const outdir = await mkdtemp(join(tmpdir(), 'sqs-inbox-worker-bench-bundle-'));
  const file = join(outdir, 'index.mjs');
  const result = await build({
    entryPoints: [join(PROJECT_ROOT, 'lambda/handlers/worker.ts')],
    outfile: file,
    bundle: true,
    platform: 'node',
    format: BUNDLING_OPTIONS.format,
    target: BUNDLING_OPTIONS.target,
    minify: BUNDLING_OPTIONS.minify,
    sourcemap: BUNDLING_OPTIONS.sourceMap ? 'linked' : false,
    sourcesContent: BUNDLING_OPTIONS.sourcesContent,
    mainFields: [...BUNDLING_OPTIONS.mainFields],
    external: [...BUNDLING_OPTIONS.externalModules],
    banner: { js: BUNDLING_OPTIONS.banner },
    metafile: true,
    logLevel: 'silent',
  });
  const output = Object.values(result.metafile.outputs).find((entry) => entry.entryPoint);
  const totals = new Map<string, number>();
  for (const [input, { bytesInOutput }] of Object.entries(output?.inputs ?? {})) {
    const name = packageOf(input);
    totals.set(name, (totals.get(name) ?? 0) + bytesInOutput);
  }
  return {
    file,
    bytes: (await stat(file)).size,
    mapBytes: (await stat(`${file}.map`)).size,
    byPackage: [...totals].map(([name, bytes]) => ({ name, bytes })).sort((a, b) => b.bytes - a.bytes),
  };
}
