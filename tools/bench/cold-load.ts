import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import type { WorkerBundle } from './bundle-worker.ts';
import { median, percentile } from './statistics.ts';

/** What loading a lazy part of the bundle adds to a warm process, in milliseconds (median over the runs). */
export interface LazyLoad {
  /** The SDK package the part brings, e.g. `@aws-sdk/client-sqs`. */
  readonly loads: string;
  readonly bytes: number;
  readonly extraMs: number;
}

/** Cold-load timings of {@link coldLoad}, medians over the runs, in milliseconds. */
export interface ColdLoad {
  readonly bareNodeMs: number;
  /**
   * An ESM module with nothing in it, imported as the bundle is: what the module loader costs any ESM handler. The
   * Lambda runtime imports every handler this way.
   */
  readonly emptyModuleMs: number;
  /**
   * That empty module importing only the Node.js built-ins postgres.js imports (`net`, `tls`, `crypto`, `stream`,
   * `perf_hooks`, `os`, `fs`): what any handler with postgres.js pays before a line of its own code runs.
   */
  readonly postgresBuiltinsMs: number;
  readonly bundleMs: number;
  /**
   * What the bundle's import adds to a bare start, from the runs' paired differences (each run's import minus the
   * same run's bare start, so that slow drifts of the machine cancel): their median, which the target is read
   * against, and their interquartile range, which shows the machine's noise.
   */
  readonly overBareNode: { readonly medianMs: number; readonly p25Ms: number; readonly p75Ms: number };
  readonly bundleWithSourceMapsMs: number;
  /**
   * The import of the tracing bundle (bundled with tracing on, as the stack does for `tracing: true`) with tracing on
   * (`POWERTOOLS_TRACE_ENABLED=true`, as in Lambda): the entry starts loading Powertools Tracer and the X-Ray SDK at
   * init, and the process ends once the Tracer is made.
   */
  readonly bundleWithTracingMs: number;
  /**
   * The import of the DynamoDB worker's bundle with `WORKER_STORE=dynamodb` (as the stack deploys it): the entry
   * makes its DynamoDB store at init. Paired with each run's bare start, as {@link ColdLoad.overBareNode}.
   */
  readonly dynamodb: { readonly bundleMs: number; readonly overBareNodeMs: number };
  /** The parts loaded on first use (first backoff, first IAM-authenticated connection). */
  readonly lazy: readonly LazyLoad[];
  readonly runs: number;
}

/** The Node.js built-ins postgres.js imports (its `src/*.js`). */
const POSTGRES_BUILTINS = ['net', 'tls', 'crypto', 'stream', 'perf_hooks', 'os', 'fs'];

/**
 * The environment the bundle needs to load, and nothing more: loading reads the configuration and builds
 * the clients but must not connect (the URL points at a closed port; a connection attempt would hang or fail).
 */
export const LOAD_ENV = {
  DATABASE_URL: 'postgres://bench:bench@127.0.0.1:9/bench',
  AWS_REGION: 'us-east-1',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  POWERTOOLS_SERVICE_NAME: 'case-worker',
};

/** {@link LOAD_ENV} with tracing on, as the stack sets it and as Lambda's environment makes the Tracer record. */
const TRACING_ENV = {
  ...LOAD_ENV,
  POWERTOOLS_TRACE_ENABLED: 'true',
  AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
};

/** {@link LOAD_ENV} of a DynamoDB worker, as the stack sets it (no database URL: the store is the table). */
export const DYNAMODB_ENV = {
  AWS_REGION: 'us-east-1',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  POWERTOOLS_SERVICE_NAME: 'case-worker',
  WORKER_STORE: 'dynamodb',
  DYNAMODB_TABLE: 'case-worker-table',
};

/** Wall time of one fresh `node` process from spawn to exit; rejects when it exits non-zero. */
export function timeNode(args: string[], env: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let stderr = '';
    const child = spawn(process.execPath, args, {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      const elapsed = performance.now() - started;
      if (code === 0) resolve(elapsed);
      else reject(new Error(`node ${args.join(' ')} exited with ${code}: ${stderr.trim().slice(0, 500)}`));
    });
  });
}

/** A module script that imports the bundle's entry (checking that it exports `handler`), then `chunks`. */
export function loader(entry: string, chunks: readonly string[] = []): string[] {
  const href = (file: string) => JSON.stringify(pathToFileURL(file).href);
  const imports = chunks.map((chunk) => `await import(${href(chunk)});`).join(' ');
  return [
    '--input-type=module',
    '-e',
    `const m = await import(${href(entry)}); if (typeof m.handler !== 'function') process.exit(3); ${imports}`,
  ];
}

/**
 * Median wall time of `runs` fresh `node` processes that import the bundle's entry, beside `runs` bare
 * `node -e 0` starts and the imports of an empty module and of the built-ins postgres.js loads (what any handler
 * pays, {@link ColdLoad}); also with `--enable-source-maps`, which the stack sets on its functions; the
 * `tracing` bundle with tracing on (its entry then loads the tracer during init; the process exits once it is
 * loaded); the `dynamodb` bundle with `WORKER_STORE=dynamodb`; and, per lazy part of the bundle, what importing its chunks after the entry adds. The kinds are
 * interleaved so that machine noise spreads evenly.
 */
export async function coldLoad(
  bundle: WorkerBundle,
  tracing: WorkerBundle,
  dynamodb: WorkerBundle,
  runs = 5,
): Promise<ColdLoad> {
  const parts = new Map<string, { files: string[]; bytes: number }>();
  for (const chunk of bundle.lazyChunks) {
    const part = parts.get(chunk.loads) ?? { files: [], bytes: 0 };
    part.files.push(chunk.file);
    part.bytes = Math.max(part.bytes, chunk.bytes); // a part's chunks share most of their code
    parts.set(chunk.loads, part);
  }
  const empty = join(dirname(bundle.file), 'empty-handler.mjs');
  const builtins = join(dirname(bundle.file), 'postgres-builtins-handler.mjs');
  await writeFile(empty, 'export const handler = async () => {};\n');
  await writeFile(
    builtins,
    `${POSTGRES_BUILTINS.map((name, i) => `import * as b${i} from 'node:${name}';`).join(' ')}\n` +
      `export const handler = async () => [${POSTGRES_BUILTINS.map((_, i) => `b${i}`).join(', ')}];\n`,
  );
  const bare: number[] = [];
  const emptyModule: number[] = [];
  const postgresBuiltins: number[] = [];
  const entry: number[] = [];
  const withMaps: number[] = [];
  const withTracing: number[] = [];
  const dynamodbEntry: number[] = [];
  const lazy = new Map<string, number[]>([...parts.keys()].map((name) => [name, []]));
  await timeNode(loader(bundle.file), LOAD_ENV); // file cache warm, as on a warm Lambda host
  await timeNode(loader(tracing.file), TRACING_ENV);
  await timeNode(loader(dynamodb.file), DYNAMODB_ENV);
  for (let run = 0; run < runs; run += 1) {
    bare.push(await timeNode(['-e', '0'], {}));
    emptyModule.push(await timeNode(loader(empty), {}));
    postgresBuiltins.push(await timeNode(loader(builtins), {}));
    entry.push(await timeNode(loader(bundle.file), LOAD_ENV));
    withMaps.push(await timeNode(loader(bundle.file), { ...LOAD_ENV, NODE_OPTIONS: '--enable-source-maps' }));
    withTracing.push(await timeNode(loader(tracing.file), TRACING_ENV));
    dynamodbEntry.push(await timeNode(loader(dynamodb.file), DYNAMODB_ENV));
    for (const [name, part] of parts)
      lazy.get(name)?.push(await timeNode(loader(bundle.file, part.files), LOAD_ENV));
  }
  const bundleMs = median(entry);
  const paired = entry.map((ms, run) => ms - (bare[run] as number));
  return {
    bareNodeMs: median(bare),
    emptyModuleMs: median(emptyModule),
    postgresBuiltinsMs: median(postgresBuiltins),
    bundleMs,
    overBareNode: { medianMs: median(paired), p25Ms: percentile(paired, 25), p75Ms: percentile(paired, 75) },
    bundleWithSourceMapsMs: median(withMaps),
    bundleWithTracingMs: median(withTracing),
    dynamodb: {
      bundleMs: median(dynamodbEntry),
      overBareNodeMs: median(dynamodbEntry.map((ms, run) => ms - (bare[run] as number))),
    },
    lazy: [...parts].map(([loads, part]) => ({
      loads,
      bytes: part.bytes,
      extraMs: median(lazy.get(loads) ?? []) - bundleMs,
    })),
    runs,
  };
}
