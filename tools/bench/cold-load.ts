import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { median } from './statistics.ts';

/** Cold-load timings of {@link coldLoad}, medians over the runs, in milliseconds. */
export interface ColdLoad {
  readonly bareNodeMs: number;
  readonly bundleMs: number;
  readonly bundleWithSourceMapsMs: number;
  readonly runs: number;
}

/**
 * The environment the bundle needs to load, and nothing more: loading reads the configuration and builds
 * the clients but must not connect (the URL points at a closed port; a connection attempt would hang or fail).
 */
const LOAD_ENV = {
  DATABASE_URL: 'postgres://bench:bench@127.0.0.1:9/bench',
  AWS_REGION: 'us-east-1',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  POWERTOOLS_SERVICE_NAME: 'case-worker',
};

/** Wall time of one fresh `node` process from spawn to exit; rejects when it exits non-zero. */
function timeNode(args: string[], env: Record<string, string>): Promise<number> {
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

/**
 * Median wall time of `runs` fresh `node` processes that import the bundle (and check that it exports a
 * `handler` function), beside `runs` bare `node -e 0` starts; also with `--enable-source-maps`, which the
 * stack sets on its functions. The three kinds are interleaved so that machine noise spreads evenly.
 */
export async function coldLoad(bundleFile: string, runs = 5): Promise<ColdLoad> {
  const load = `const m = await import(${JSON.stringify(pathToFileURL(bundleFile).href)}); if (typeof m.handler !== 'function') process.exit(3);`;
  const bare: number[] = [];
  const bundle: number[] = [];
  const withMaps: number[] = [];
  await timeNode(['--input-type=module', '-e', load], LOAD_ENV); // file cache warm, as on a warm Lambda host
  for (let run = 0; run < runs; run += 1) {
    bare.push(await timeNode(['-e', '0'], {}));
    bundle.push(await timeNode(['--input-type=module', '-e', load], LOAD_ENV));
    withMaps.push(
      await timeNode(['--input-type=module', '-e', load], {
        ...LOAD_ENV,
        NODE_OPTIONS: '--enable-source-maps',
      }),
    );
  }
  return {
    bareNodeMs: median(bare),
    bundleMs: median(bundle),
    bundleWithSourceMapsMs: median(withMaps),
    runs,
  };
}
