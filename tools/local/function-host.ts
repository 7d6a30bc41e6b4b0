import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SQSEvent } from 'aws-lambda';
import { DEFAULT_WORKER_BUNDLE_PROFILE, type WorkerBundleProfile } from '../../lib/worker-bundle-profile.ts';
import { bundleFunction } from './bundle-function.ts';
import { execute, type Failure, failureOf } from './execute-invocation.ts';
import { initialize, killEnvironment, startEnvironment, stopEnvironment } from './function-environment.ts';
import { createHostState, type HostState } from './function-host-state.ts';
import { finish, type InvocationFacts } from './invocation-report.ts';
import { canReadProcessMemory } from './process-memory.ts';

/** Where a line of an execution environment's output came from. */
export interface OutputSource {
  readonly stream: 'stdout' | 'stderr';
  /** Which execution environment (1, 2, … in the order they were started). */
  readonly environmentId: number;
}

/** Options of {@link startFunctionHost}. */
export interface FunctionHostOptions {
  /** Absolute path of the function's module: exports `handler` (an entry file), or `handlers` (`--handlers`). */
  readonly entry: string;
  /** `context.functionName` and `AWS_LAMBDA_FUNCTION_NAME`. */
  readonly functionName: string;
  /** The function's `MemorySize`, 128–10,240 MB: the V8 flags and the limit an environment is killed above. */
  readonly memorySizeMb: number;
  /** The function's timeout: an invocation still running then is killed with its environment. */
  readonly timeoutMs: number;
  /** The function's environment variables (the synthesized function's, pointed at the local stack). */
  readonly environment: Readonly<Record<string, string>>;
  /** `AWS_REGION` and the context's ARN. @default 'us-east-1' */
  readonly region?: string;
  /** The worker bundle profile (the store and tracing setting the stack bundles with). @default PostgreSQL, no tracing */
  readonly profile?: WorkerBundleProfile;
  /** Every line an environment writes (its logs). @default dropped */
  readonly onOutput?: (line: string, source: OutputSource) => void;
  /** Every invocation, once it ended (its REPORT line is `report`). */
  readonly onInvocation?: (invocation: FunctionInvocation) => void;
}

/** A function as the host runs it: its module, name, memory, timeout and variables (the options but the listeners). */
export type FunctionSettings = Omit<FunctionHostOptions, 'onOutput' | 'onInvocation'>;

/**
 * How an invocation ended: the handler's response, or a failure — `error` (the handler threw, the init failed, the
 * runtime exited), `timeout` (killed at the function timeout) or `out-of-memory` (killed above the memory size, or
 * ended by V8's heap limit). `errorType` is Lambda's (`Runtime.OutOfMemory`, `Runtime.ExitError`, the error's name).
 */
export type FunctionInvocation = InvocationFacts &
  ({ readonly ok: true; readonly response: unknown } | ({ readonly ok: false } & Failure));

/** Counters of a host (a live view). */
export interface FunctionHostStats {
  invocations: number;
  /** Execution environments started (one per cold start). */
  coldStarts: number;
  /** Handler errors, init failures and runtime exits. */
  errors: number;
  timeouts: number;
  /** Environments killed (or ended by V8) for memory. */
  outOfMemory: number;
  /** The highest `maxMemoryUsedMb` of an invocation. */
  peakMemoryMb: number;
  /** `maxMemoryUsedMb` of every invocation, oldest first (the last 10,000). */
  readonly memoryPerInvocationMb: number[];
}

/** A running host, returned by {@link startFunctionHost}. */
export interface FunctionHost {
  readonly functionName: string;
  readonly memorySizeMb: number;
  readonly timeoutMs: number;
  readonly stats: Readonly<FunctionHostStats>;
  /** Runs one invocation in a warm environment, or a new one (a cold start) when none is free. */
  invoke(event: SQSEvent, request: { readonly awsRequestId: string }): Promise<FunctionInvocation>;
  /** Ends every environment (after the invocations in flight) and removes the bundle. */
  stop(): Promise<void>;
}

/**
 * Runs a function's handler locally as Lambda runs it, within its memory and its timeout: each execution environment
 * is a child process running the function's module bundled as the stack bundles it (`bundle-function.ts`), started
 * with the V8 flags Lambda gives a function of `memorySizeMb` (`lambdaNodeFlags`) and with the function's variables
 * only, and answering one invocation at a time over its IPC channel (`function-runtime.ts`: the event and the context
 * in, the JSON response out). An environment is reused while it stays healthy, as Lambda reuses a warm one; a new one
 * is started (a cold start) when none is free.
 *
 * What Lambda enforces, the host enforces:
 * - **Memory**: during an invocation the environment's resident size is read every 10 ms (`watchMemory`: its
 *   kernel high-water mark, reset at the start of each invocation, so a spike between reads is seen); above
 *   `memorySizeMb` the process is killed (SIGKILL) and the invocation reported as Lambda reports it: `Runtime exited with error:
 *   signal: killed`, error type `Runtime.OutOfMemory`. A process that V8's heap limit ends (`JavaScript heap out of
 *   memory`, then an abort) is reported as out of memory too.
 * - **Time**: at the function timeout the environment is killed (`Task timed out after N seconds`). Lambda resets an
 *   environment after a timeout or a crash, so the next invocation there re-runs the init phase: here it is a new
 *   process, a cold start.
 * - A handler that throws is an error, its environment kept (the runtime survives it); one whose init fails or whose
 *   runtime exits is discarded, and the next invocation starts a new one.
 *
 * @example
 * ```ts
 * const host = await startFunctionHost({ entry, functionName: 'case-worker', memorySizeMb: 512, timeoutMs: 30_000, environment });
 * const invocation = await host.invoke(event, { awsRequestId: randomUUID() });
 * await host.stop();
 * ```
 */
export async function startFunctionHost(options: FunctionHostOptions): Promise<FunctionHost> {
  if (!canReadProcessMemory()) {
    throw new Error(
      'The local function host reads each environment’s memory from /proc/<pid>/status, which this system lacks: run npm start on Linux (or in a Linux container)',
    );
  }
  const workdir = await mkdtemp(join(tmpdir(), 'sqs-inbox-worker-function-'));
  let bundle: string;
  try {
    bundle = await bundleFunction({
      entry: options.entry,
      outdir: workdir,
      profile: options.profile ?? DEFAULT_WORKER_BUNDLE_PROFILE,
    });
  } catch (error) {
    await rm(workdir, { recursive: true, force: true });
    throw error;
  }
  // A process that ends without stopping the host (Ctrl-C's exit hooks, a crash) removes the bundle all the same; its
  // environments end with it (their IPC channel closes).
  const removeBundle = () => rmSync(workdir, { recursive: true, force: true });
  process.once('exit', removeBundle);
  const host = createHostState(options, bundle);
  const inFlight = new Set<Promise<unknown>>();
  let stopping = false;

  return {
    functionName: options.functionName,
    memorySizeMb: options.memorySizeMb,
    timeoutMs: options.timeoutMs,
    stats: host.stats,
    invoke(event, { awsRequestId }) {
      if (stopping)
        return Promise.reject(new Error(`the function host of ${options.functionName} is stopped`));
      const running = run(host, event, awsRequestId);
      inFlight.add(running);
      void running.finally(() => inFlight.delete(running)).catch(() => {});
      return running;
    },
    async stop() {
      stopping = true;
      await Promise.allSettled([...inFlight]);
      await Promise.all([...host.all].map(stopEnvironment));
      process.off('exit', removeBundle);
      await rm(workdir, { recursive: true, force: true });
    },
  };
}

/** One invocation: a warm environment or a new one (its init phase first), the event, and the report. */
async function run(host: HostState, event: SQSEvent, awsRequestId: string): Promise<FunctionInvocation> {
  host.stats.invocations += 1;
  // The most recently used environment first, as Lambda tends to route to the warmest one.
  const warm = host.idle.pop();
  const environment = warm ?? startEnvironment(host);
  const coldStart = !warm;
  const init = coldStart ? await initialize(environment) : undefined;
  const initDurationMs = init?.type === 'ready' ? init.initDurationMs : undefined;
  const started = performance.now();
  if (init?.type === 'init-error') {
    killEnvironment(host, environment);
    await environment.exited;
    const failure = {
      reason: 'error' as const,
      errorType: init.errorType,
      detail: `${init.errorType}: ${init.errorMessage}`,
    };
    return finish(host, { awsRequestId, environment, coldStart, started, peakBytes: 0, failure });
  }
  const { ending, peakBytes } = await execute(host, environment, event, awsRequestId);
  // The runtime survives a handler's error, as Lambda's does; a kill or an exit ends the environment.
  if (ending.kind === 'response' || ending.kind === 'error') host.idle.push(environment);
  const failure = failureOf(host.options, ending, environment, awsRequestId);
  return finish(host, {
    awsRequestId,
    environment,
    coldStart,
    initDurationMs,
    started,
    peakBytes,
    ...(failure ? { failure } : { response: (ending as { response: unknown }).response }),
  });
}
