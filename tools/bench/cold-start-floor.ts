import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { PROJECT_ROOT } from '../../lib/bundled-function.ts';
import type { WorkerBundleProfile } from '../../lib/worker-bundle-profile.ts';
import { bundleWorker, type WorkerBundle } from './bundle-worker.ts';
import { DYNAMODB_ENV, LOAD_ENV } from './cold-load.ts';
import { median, percentile } from './statistics.ts';

/** A median and interquartile range of paired differences, in ms. */
export interface PairedMs {
  readonly medianMs: number;
  readonly p25Ms: number;
  readonly p75Ms: number;
}

/** One store entry's cold start over its floor. */
export interface FloorResult {
  readonly store: WorkerBundleProfile['store'];
  /** The worker entry's bundle (as the stack bundles it) and the floor's (the same esbuild options). */
  readonly entry: WorkerBundle;
  readonly floor: WorkerBundle;
  /** Import of the floor over a bare start (median of the runs' paired differences), wall time. */
  readonly floorOverBare: PairedMs;
  /** Import of the entry minus the floor's in the same run, source maps off, wall time (the target is read against this). */
  readonly overFloor: PairedMs;
  /** The same with `--enable-source-maps` on both (as the stack sets it). */
  readonly overFloorWithSourceMaps: PairedMs;
  /**
   * The same two differences in CPU time (user + system of the process, every thread: `process.cpuUsage()` once the
   * import is done): on a shared machine a process waits for a core, which wall time counts and CPU time does not.
   */
  readonly cpuOverFloor: PairedMs;
  readonly cpuOverFloorWithSourceMaps: PairedMs;
  /**
   * The floor with the worker's libraries made too (`cold-floor-libraries-*.ts`: Powertools Logger, Metrics, the batch
   * processor, a zod schema), over the floor, and the entry over it (the engine's own share), CPU time, source maps off.
   */
  readonly libraries: {
    readonly bundle: WorkerBundle;
    readonly cpuOverFloor: PairedMs;
    readonly entryCpuOver: PairedMs;
  };
}

/** The cold start of each store's worker entry over the floor any handler on the same client pays. */
export interface ColdStartFloors {
  readonly runs: number;
  readonly stores: readonly FloorResult[];
}

/** The environment each store's entry and floors load with (the floors ignore it). */
const LOAD_ENVS: Readonly<Record<WorkerBundleProfile['store'], Record<string, string>>> = {
  postgres: LOAD_ENV,
  dynamodb: DYNAMODB_ENV,
};

const paired = (values: readonly number[]): PairedMs => ({
  medianMs: median(values),
  p25Ms: percentile(values, 25),
  p75Ms: percentile(values, 75),
});

/**
 * Bundles each store's worker entry and its floor (an empty ESM handler that imports and makes the same database
 * client: postgres.js, or `@aws-sdk/client-dynamodb`, which is all the DynamoDB store loads at cold start; its
 * document client comes with the commit code, on the first batch) with the same esbuild options, then times `runs`
 * rounds of fresh processes, interleaved and in a rotating order: an empty module's import, and per store the floor and
 * the entry, source maps off and on. Each difference is taken within a round (the entry's import minus the floor's
 * of the same round), so slow drifts of a shared machine cancel; the median is read against the target and the
 * interquartile range shows the noise.
 */
export async function coldStartFloors(runs = 25): Promise<ColdStartFloors> {
  const built = [];
  for (const store of ['postgres', 'dynamodb'] as const) {
    const profile = { store, tracing: false };
    built.push({
      store,
      env: LOAD_ENVS[store],
      entry: await bundleWorker(profile),
      floor: await bundleWorker(profile, join(PROJECT_ROOT, `tools/bench/cold-floor-${store}.ts`)),
      libraries: await bundleWorker(
        profile,
        join(PROJECT_ROOT, `tools/bench/cold-floor-libraries-${store}.ts`),
      ),
    });
  }
  const bare = join(PROJECT_ROOT, 'tools/bench/cold-floor-empty.mjs');
  const maps = (env: Record<string, string>) => ({ ...env, NODE_OPTIONS: '--enable-source-maps' });
  type Kind = { key: string; run: () => Promise<Timed> };
  const kinds: Kind[] = [{ key: 'bare', run: () => timeImport(bare, {}) }];
  for (const { store, env, entry, floor, libraries } of built) {
    kinds.push(
      { key: `${store}:floor`, run: () => timeImport(floor.file, env) },
      { key: `${store}:libraries`, run: () => timeImport(libraries.file, env) },
      { key: `${store}:entry`, run: () => timeImport(entry.file, env) },
      { key: `${store}:floor+maps`, run: () => timeImport(floor.file, maps(env)) },
      { key: `${store}:entry+maps`, run: () => timeImport(entry.file, maps(env)) },
    );
  }
  for (const kind of kinds) await kind.run(); // file cache warm, as on a warm Lambda host
  const times = new Map<string, Timed[]>(kinds.map(({ key }) => [key, []]));
  for (let run = 0; run < runs; run += 1) {
    for (let index = 0; index < kinds.length; index += 1) {
      const kind = kinds[(index + run) % kinds.length] as Kind;
      times.get(kind.key)?.push(await kind.run());
    }
  }
  const of = (key: string) => times.get(key) ?? [];
  const minus = (a: string, b: string, clock: keyof Timed = 'wallMs') =>
    of(a).map((timed, run) => timed[clock] - (of(b)[run] as Timed)[clock]);
  return {
    runs,
    stores: built.map(({ store, entry, floor, libraries }) => ({
      store,
      entry,
      floor,
      floorOverBare: paired(minus(`${store}:floor`, 'bare')),
      overFloor: paired(minus(`${store}:entry`, `${store}:floor`)),
      overFloorWithSourceMaps: paired(minus(`${store}:entry+maps`, `${store}:floor+maps`)),
      cpuOverFloor: paired(minus(`${store}:entry`, `${store}:floor`, 'cpuMs')),
      cpuOverFloorWithSourceMaps: paired(minus(`${store}:entry+maps`, `${store}:floor+maps`, 'cpuMs')),
      libraries: {
        bundle: libraries,
        cpuOverFloor: paired(minus(`${store}:libraries`, `${store}:floor`, 'cpuMs')),
        entryCpuOver: paired(minus(`${store}:entry`, `${store}:libraries`, 'cpuMs')),
      },
    })),
  };
}

/** A fresh process's time: wall from spawn to exit, and its CPU once the import was done. */
interface Timed {
  readonly wallMs: number;
  readonly cpuMs: number;
}

/**
 * Spawns a fresh `node` that imports `file` (checking that it exports `handler`), as the Lambda runtime imports a
 * handler, then writes its `process.cpuUsage()`; rejects when it exits non-zero.
 */
function timeImport(file: string, env: Record<string, string>): Promise<Timed> {
  const script =
    `const m = await import(${JSON.stringify(pathToFileURL(file).href)}); ` +
    "if (typeof m.handler !== 'function') process.exit(3); " +
    'const u = process.cpuUsage(); process.stdout.write(String((u.user + u.system) / 1000));';
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let stdout = '';
    let stderr = '';
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      const wallMs = performance.now() - started;
      if (code === 0) resolve({ wallMs, cpuMs: Number(stdout) });
      else reject(new Error(`node importing ${file} exited with ${code}: ${stderr.trim().slice(0, 500)}`));
    });
  });
}
