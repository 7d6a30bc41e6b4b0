import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { bundleOptions } from '../../lib/bundled-function.ts';
import { shippedWorkerEntry } from '../../lib/shipped-worker-entry.ts';
import { DEFAULT_WORKER_BUNDLE_PROFILE, type WorkerBundleProfile } from '../../lib/worker-bundle-profile.ts';

/** A chunk the bundle loads with `import()` only when some code path first needs it. */
export interface LazyChunk {
  /** Absolute path of the chunk file. */
  readonly file: string;
  /** Bytes it brings that a cold start has not loaded: the chunk and the chunks it imports statically. */
  readonly bytes: number;
  /**
   * The package the chunk brings (`@aws-sdk/client-sqs`, `@aws-sdk/rds-signer`, `@aws-lambda-powertools/tracer`),
   * else its file name.
   */
  readonly loads: string;
}

/** The worker bundle built by {@link bundleWorker}. */
export interface WorkerBundle {
  /** The store and tracing setting it was bundled for. */
  readonly profile: WorkerBundleProfile;
  /** Files a cold start loads (`index.mjs` and its static chunks): each is a module Node reads, compiles and links. */
  readonly coldFiles: number;
  /** Absolute path of `index.mjs`, the entry. */
  readonly file: string;
  /** Bytes of every `.mjs` file: what is deployed. */
  readonly bytes: number;
  /** Bytes a cold start loads: `index.mjs` and the chunks it imports statically. */
  readonly coldBytes: number;
  /** Bytes of the source maps (separate files, not loaded unless enabled). */
  readonly mapBytes: number;
  /** Chunks the entry loads with `import()`, directly, largest first. */
  readonly lazyChunks: readonly LazyChunk[];
  /** Bytes in the output per npm package (or `(project)` for our own code), largest first. */
  readonly byPackage: { name: string; bytes: number }[];
  /** The same for what a cold start loads ({@link WorkerBundle.coldBytes}): where the cold start goes. */
  readonly coldByPackage: { name: string; bytes: number }[];
}

/** The npm package a bundled input belongs to (its innermost `node_modules` folder), or `(project)`. */
export function packageOf(input: string): string {
  const at = input.lastIndexOf('node_modules/');
  if (at < 0) return '(project)';
  const [scope, name] = input.slice(at + 'node_modules/'.length).split('/');
  return scope?.startsWith('@') ? `${scope}/${name}` : (scope ?? '(project)');
}

/** Bytes per package of some outputs of a metafile, largest first. */
function packagesOf(outputs: readonly Metafile['outputs'][string][]): { name: string; bytes: number }[] {
  const totals = new Map<string, number>();
  for (const output of outputs) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      const name = packageOf(input);
      totals.set(name, (totals.get(name) ?? 0) + bytesInOutput);
    }
  }
  return [...totals].map(([name, bytes]) => ({ name, bytes })).sort((a, b) => b.bytes - a.bytes);
}

/**
 * The outputs `from` loads as soon as it is imported: itself and, transitively, what it imports statically.
 * Keys are output paths as the metafile writes them (relative to the working directory).
 */
function staticClosure(metafile: Metafile, from: string): Set<string> {
  const seen = new Set<string>([from]);
  const pending = [from];
  for (let path = pending.pop(); path !== undefined; path = pending.pop()) {
    for (const imported of metafile.outputs[path]?.imports ?? []) {
      if (imported.kind === 'import-statement' && !imported.external && !seen.has(imported.path)) {
        seen.add(imported.path);
        pending.push(imported.path);
      }
    }
  }
  return seen;
}

/**
 * What a lazy chunk is named by in the report: the SDK client or signer it brings, or Powertools Tracer when it
 * brings the X-Ray SDK (the tracer's own code is the smaller part of that chunk), else `fallback`.
 */
function lazyPartName(packages: readonly { name: string }[], fallback: string): string {
  for (const { name } of packages) {
    if (name.startsWith('@aws-sdk/client-') || name === '@aws-sdk/rds-signer') return name;
    if (name === 'aws-xray-sdk-core' || name === '@aws-lambda-powertools/tracer') {
      return '@aws-lambda-powertools/tracer';
    }
  }
  return fallback;
}

/**
 * Bundles the shipped worker entry of the profile's store (`lambda/handlers/worker.ts`, `worker-dynamodb.ts`) exactly
 * as the stack does for a worker of `profile` (`bundleOptions` of lib/bundled-function.ts: ESM, minified, code
 * splitting, linked source maps, everything bundled including the AWS SDK, the parts the profile cannot reach left out) into a temp folder, and measures it: deployed bytes, bytes a
 * cold start loads, and the chunks loaded later on first use. `entryFile` bundles another entry the same way (the
 * bench's cold-start floors, `cold-floor-*.ts`).
 */
export async function bundleWorker(
  profile: WorkerBundleProfile = DEFAULT_WORKER_BUNDLE_PROFILE,
  entryFile: string = shippedWorkerEntry(profile.store),
): Promise<WorkerBundle> {
  const outdir = await mkdtemp(join(tmpdir(), 'sqs-inbox-worker-bench-bundle-'));
  const result = await build({
    ...bundleOptions(entryFile, outdir, profile),
    metafile: true,
    absWorkingDir: outdir,
    logLevel: 'silent',
  });
  const { metafile } = result;
  const scripts = Object.entries(metafile.outputs).filter(([path]) => path.endsWith('.mjs'));
  const entry = scripts.find(([path]) => path === 'index.mjs')?.[0];
  if (!entry) throw new Error(`esbuild wrote no entry output into ${outdir}`);
  const cold = staticClosure(metafile, entry);
  const lazy = new Set<string>();
  for (const path of cold) {
    for (const imported of metafile.outputs[path]?.imports ?? []) {
      if (imported.kind === 'dynamic-import' && !imported.external && !cold.has(imported.path)) {
        lazy.add(imported.path);
      }
    }
  }
  const bytesOf = (paths: Iterable<string>) =>
    [...paths].reduce((sum, path) => sum + (metafile.outputs[path]?.bytes ?? 0), 0);
  return {
    profile,
    file: join(outdir, basename(entry)),
    bytes: bytesOf(scripts.map(([path]) => path)),
    coldBytes: bytesOf(cold),
    coldFiles: cold.size,
    mapBytes: bytesOf(Object.keys(metafile.outputs).filter((path) => path.endsWith('.map'))),
    lazyChunks: [...lazy]
      .map((path) => ({
        file: join(outdir, path),
        // What the chunk brings, with what it imports statically (shared chunks included).
        bytes: bytesOf(new Set([...staticClosure(metafile, path)].filter((p) => !cold.has(p)))),
        loads: lazyPartName(
          packagesOf([...staticClosure(metafile, path)].flatMap((p) => metafile.outputs[p] ?? [])),
          basename(path),
        ),
      }))
      .sort((a, b) => b.bytes - a.bytes),
    byPackage: packagesOf(scripts.map(([, output]) => output)),
    coldByPackage: packagesOf([...cold].flatMap((path) => metafile.outputs[path] ?? [])),
  };
}
