import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { SQSEvent } from 'aws-lambda';
import { DEFAULT_WORKER_BUNDLE_PROFILE, type WorkerBundleProfile } from '../../lib/worker-bundle-profile.ts';
import { lambdaNodeFlags } from '../bench/lambda-node-flags.ts';
import { bundleFunction } from './bundle-function.ts';
import type { InvokeMessage, RuntimeMessage } from './function-runtime.ts';
import { canReadProcessMemory, resetPeakMemory } from './process-memory.ts';
import { watchMemory } from './watch-memory.ts';

const MIB = 1024 * 1024;
/** Lambda's limit on the Init phase of an on-demand function. */
const INIT_TIMEOUT_MS = 10_000;

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

/** What every invocation reports, as Lambda's REPORT line does. */
interface InvocationFacts {
  readonly awsRequestId: string;
  readonly environmentId: number;
  /** The process of the execution environment (gone after a kill). */
  readonly pid: number;
  /** A new execution environment ran it (its init phase came first). */
  readonly coldStart: boolean;
  /** Of a cold start. */
  readonly initDurationMs?: number;
  readonly durationMs: number;
  readonly memorySizeMb: number;
  /** The environment's peak during the invocation, MB (at most `memorySizeMb`, as Lambda reports it). */
  readonly maxMemoryUsedMb: number;
  /** Lambda's `REPORT RequestId: …` line of the invocation. */
  readonly report: string;
}

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

/** How an environment's init phase ended. */
type Ready =
  | { readonly type: 'ready'; readonly initDurationMs: number }
  | Extract<RuntimeMessage, { type: 'init-error' }>;

/** One execution environment: a child process running the bundle. */
interface Environment {
  readonly id: number;
  readonly child: ChildProcess;
  readonly pid: number;
  /** When it was spawned (`performance.now()`): its init duration counts from there, as Lambda's covers the runtime's start. */
  readonly spawnedAt: number;
  readonly ready: Promise<Ready>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** V8 reported its heap exhausted on stderr (the process aborts next). */
  heapOutOfMemory: boolean;
  onMessage?: (message: RuntimeMessage) => void;
}

/** How an invocation in an environment ended, as the host saw it. */
type Ending =
  | { readonly kind: 'response'; readonly response: unknown }
  | { readonly kind: 'error'; readonly errorType: string; readonly errorMessage: string }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'out-of-memory' }
  | { readonly kind: 'exit'; readonly code: number | null; readonly signal: NodeJS.Signals | null };

/** A failed invocation's reason, error type and text. */
interface Failure {
  readonly reason: 'error' | 'timeout' | 'out-of-memory';
  readonly errorType: string;
  readonly detail: string;
}

/** How Go's os/exec, which Lambda's runtime API reports through, names a process's end. */
function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  const names: Partial<Record<NodeJS.Signals, string>> = {
    SIGKILL: 'killed',
    SIGABRT: 'aborted (core dumped)',
    SIGSEGV: 'segmentation fault (core dumped)',
    SIGTERM: 'terminated',
  };
  return signal ? `signal: ${names[signal] ?? signal}` : `exit status ${code}`;
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

/** What a host's steps share: its options, its bundle, its environments (all, and the idle ones) and its stats. */
interface HostState {
  readonly options: FunctionHostOptions;
  readonly bundle: string;
  readonly region: string;
  readonly limitBytes: number;
  readonly environmentVariables: NodeJS.ProcessEnv;
  readonly stats: FunctionHostStats;
  readonly idle: Environment[];
  readonly all: Set<Environment>;
  nextId: number;
}

function createHostState(options: FunctionHostOptions, bundle: string): HostState {
  const region = options.region ?? 'us-east-1';
  return {
    options,
    bundle,
    region,
    limitBytes: options.memorySizeMb * MIB,
    environmentVariables: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      // What Lambda's runtime sets in every environment.
      AWS_REGION: region,
      AWS_DEFAULT_REGION: region,
      AWS_LAMBDA_FUNCTION_NAME: options.functionName,
      AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(options.memorySizeMb),
      TZ: 'UTC',
      ...options.environment,
    },
    stats: {
      invocations: 0,
      coldStarts: 0,
      errors: 0,
      timeouts: 0,
      outOfMemory: 0,
      peakMemoryMb: 0,
      memoryPerInvocationMb: [],
    },
    idle: [],
    all: new Set<Environment>(),
    nextId: 1,
  };
}

/** Spawns a new execution environment (a cold start) and tracks it until it exits. */
function startEnvironment(host: HostState): Environment {
  const { options } = host;
  const id = host.nextId++;
  const child = spawn(process.execPath, [...lambdaNodeFlags(options.memorySizeMb), host.bundle], {
    env: host.environmentVariables,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    serialization: 'json',
  });
  const environment: Environment = {
    id,
    child,
    pid: child.pid as number,
    spawnedAt: performance.now(),
    heapOutOfMemory: false,
    ready: new Promise<Ready>((resolve) => {
      child.on('message', (message: RuntimeMessage) => {
        if (message.type === 'ready')
          resolve({ type: 'ready', initDurationMs: performance.now() - environment.spawnedAt });
        else if (message.type === 'init-error') resolve(message);
        else environment.onMessage?.(message);
      });
      child.once('exit', (code, signal) =>
        resolve({
          type: 'init-error',
          errorType: 'Runtime.ExitError',
          errorMessage: `Runtime exited with error: ${describeExit(code, signal)}`,
        }),
      );
    }),
    exited: new Promise((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
    }),
  };
  child.on('error', () => {}); // a failed spawn ends as an exit, reported by the invocation
  forwardOutput(environment, options.onOutput);
  host.all.add(environment);
  void environment.exited.then(() => {
    host.all.delete(environment);
    const at = host.idle.indexOf(environment);
    if (at >= 0) host.idle.splice(at, 1);
  });
  host.stats.coldStarts += 1;
  return environment;
}

/** Hands each line an environment writes to the listener, and notes V8's heap-limit abort. */
function forwardOutput(environment: Environment, onOutput: FunctionHostOptions['onOutput']): void {
  for (const stream of ['stdout', 'stderr'] as const) {
    const lines = createInterface({
      input: environment.child[stream] as NodeJS.ReadableStream,
      crlfDelay: Infinity,
    });
    lines.on('line', (line) => {
      if (stream === 'stderr' && line.includes('JavaScript heap out of memory'))
        environment.heapOutOfMemory = true;
      onOutput?.(line, { stream, environmentId: environment.id });
    });
  }
}

function kill(host: HostState, environment: Environment): void {
  const at = host.idle.indexOf(environment);
  if (at >= 0) host.idle.splice(at, 1);
  if (environment.child.exitCode === null && environment.child.signalCode === null)
    environment.child.kill('SIGKILL');
}

/** Ends an environment at the host's stop: SIGTERM, then SIGKILL if it is still there after 3 s. */
async function stopEnvironment(environment: Environment): Promise<void> {
  environment.child.kill('SIGTERM');
  const gone = await Promise.race([
    environment.exited.then(() => true),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 3000).unref()),
  ]);
  if (!gone) {
    environment.child.kill('SIGKILL');
    await once(environment.child, 'exit').catch(() => {});
  }
}

/** The init phase of a new environment: ready, or why not (an init error, an exit, Lambda's 10 s limit). */
async function initialize(environment: Environment): Promise<Ready> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<Ready>((resolve) => {
    timer = setTimeout(
      () =>
        resolve({
          type: 'init-error',
          errorType: 'Runtime.InitTimeout',
          errorMessage: `INIT_REPORT Init Duration: ${INIT_TIMEOUT_MS.toFixed(2)} ms Phase: init Status: timeout`,
        }),
      INIT_TIMEOUT_MS,
    );
  });
  const ready = await Promise.race([environment.ready, timedOut]);
  clearTimeout(timer);
  return ready;
}

/**
 * Sends the event to a ready environment and waits for how it ends: its answer, or the kill at the timeout or above
 * the memory size, or its exit. The peak is the environment's over the invocation (its high-water mark is reset
 * first).
 */
async function execute(
  host: HostState,
  environment: Environment,
  event: SQSEvent,
  awsRequestId: string,
): Promise<{ ending: Ending; peakBytes: number }> {
  const { options, limitBytes } = host;
  resetPeakMemory(environment.pid);
  let settle!: (ending: Ending) => void;
  const ended = new Promise<Ending>((resolve) => {
    settle = resolve;
  });
  const watch = watchMemory({
    pid: environment.pid,
    limitBytes,
    onExceeded: () => {
      kill(host, environment);
      settle({ kind: 'out-of-memory' });
    },
  });
  const timer = setTimeout(() => {
    kill(host, environment);
    settle({ kind: 'timeout' });
  }, options.timeoutMs);
  environment.onMessage = (message) => {
    if (message.type === 'response' && message.awsRequestId === awsRequestId)
      settle({ kind: 'response', response: message.response });
    if (message.type === 'error' && message.awsRequestId === awsRequestId)
      settle({ kind: 'error', errorType: message.errorType, errorMessage: message.errorMessage });
  };
  void environment.exited.then(({ code, signal }) =>
    // The sampler kills before this process hears of it: its flag tells a kill for memory from any other exit.
    settle(watch.exceeded() ? { kind: 'out-of-memory' } : { kind: 'exit', code, signal }),
  );
  environment.child.send({
    type: 'invoke',
    awsRequestId,
    event,
    deadline: Date.now() + options.timeoutMs,
    functionName: options.functionName,
    memoryLimitInMB: options.memorySizeMb,
    region: host.region,
  } satisfies InvokeMessage);

  let ending = await ended;
  clearTimeout(timer);
  environment.onMessage = undefined;
  // The last read: a peak above the limit since the previous one means the kernel would have killed it (the
  // handler outran the sampler: what it did, a commit included, stands, as a kill a moment later would leave it).
  if ((ending.kind === 'response' || ending.kind === 'error') && (watch.check() ?? 0) > limitBytes) {
    kill(host, environment);
    ending = { kind: 'out-of-memory' };
  }
  const peakBytes = watch.stop();
  if (ending.kind !== 'response' && ending.kind !== 'error') await environment.exited;
  return { ending, peakBytes };
}

/** Lambda's report of a failed ending: its reason, error type and text. */
function failureOf(
  options: FunctionHostOptions,
  ending: Ending,
  environment: Environment,
  awsRequestId: string,
): Failure | undefined {
  switch (ending.kind) {
    case 'response':
      return undefined;
    case 'error':
      return {
        reason: 'error',
        errorType: ending.errorType,
        detail: `${ending.errorType}: ${ending.errorMessage}`,
      };
    case 'timeout':
      return {
        reason: 'timeout',
        errorType: 'Sandbox.Timedout',
        detail: `Task timed out after ${(options.timeoutMs / 1000).toFixed(2)} seconds`,
      };
    case 'out-of-memory':
      return {
        reason: 'out-of-memory',
        errorType: 'Runtime.OutOfMemory',
        detail: `RequestId: ${awsRequestId} Error: Runtime exited with error: signal: killed`,
      };
    case 'exit': {
      const exit = `RequestId: ${awsRequestId} Error: Runtime exited with error: ${describeExit(ending.code, ending.signal)}`;
      return environment.heapOutOfMemory
        ? {
            reason: 'out-of-memory',
            errorType: 'Runtime.ExitError',
            detail: `${exit} (JavaScript heap out of memory: the V8 heap limit of Lambda's flags for ${options.memorySizeMb} MB)`,
          }
        : { reason: 'error', errorType: 'Runtime.ExitError', detail: exit };
    }
  }
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
    kill(host, environment);
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

/** How an invocation ended, as `finish` turns it into the caller's result. */
interface Ended {
  awsRequestId: string;
  environment: Environment;
  coldStart: boolean;
  initDurationMs?: number;
  started: number;
  peakBytes: number;
  response?: unknown;
  failure?: Failure;
}

/** Counts an ended invocation in the stats and returns the memory it used as Lambda reports it. */
function recordStats(host: HostState, ended: Ended): number {
  const { options, stats } = host;
  const { failure } = ended;
  const usedMb = Math.ceil(ended.peakBytes / MIB);
  // As Lambda's REPORT line: the peak is capped at the memory size (an out-of-memory kill shows them equal).
  const maxMemoryUsedMb =
    failure?.reason === 'out-of-memory' ? options.memorySizeMb : Math.min(usedMb, options.memorySizeMb);
  if (failure?.reason === 'error') stats.errors += 1;
  if (failure?.reason === 'timeout') stats.timeouts += 1;
  if (failure?.reason === 'out-of-memory') stats.outOfMemory += 1;
  stats.peakMemoryMb = Math.max(stats.peakMemoryMb, maxMemoryUsedMb);
  stats.memoryPerInvocationMb.push(maxMemoryUsedMb);
  if (stats.memoryPerInvocationMb.length > 10_000) stats.memoryPerInvocationMb.shift();
  return maxMemoryUsedMb;
}

/** Lambda's REPORT line of an invocation, with its status when it failed in the runtime or timed out. */
function reportLine(
  options: FunctionHostOptions,
  ended: Ended,
  durationMs: number,
  maxMemoryUsedMb: number,
): string {
  const { failure } = ended;
  const status = !failure
    ? ''
    : failure.reason === 'timeout'
      ? '\tStatus: timeout'
      : failure.errorType.startsWith('Runtime.')
        ? `\tStatus: error\tError Type: ${failure.errorType}`
        : '';
  const report = [
    `REPORT RequestId: ${ended.awsRequestId}`,
    `Duration: ${durationMs.toFixed(2)} ms`,
    `Billed Duration: ${Math.max(1, Math.ceil(durationMs))} ms`,
    `Memory Size: ${options.memorySizeMb} MB`,
    `Max Memory Used: ${maxMemoryUsedMb} MB`,
    ...(ended.initDurationMs !== undefined ? [`Init Duration: ${ended.initDurationMs.toFixed(2)} ms`] : []),
  ].join('\t');
  return `${report}${status}`;
}

function finish(host: HostState, ended: Ended): FunctionInvocation {
  const { options } = host;
  const { failure } = ended;
  const durationMs = performance.now() - ended.started;
  const maxMemoryUsedMb = recordStats(host, ended);
  const facts: InvocationFacts = {
    awsRequestId: ended.awsRequestId,
    environmentId: ended.environment.id,
    pid: ended.environment.pid,
    coldStart: ended.coldStart,
    ...(ended.initDurationMs !== undefined ? { initDurationMs: ended.initDurationMs } : {}),
    durationMs,
    memorySizeMb: options.memorySizeMb,
    maxMemoryUsedMb,
    report: reportLine(options, ended, durationMs, maxMemoryUsedMb),
  };
  const invocation: FunctionInvocation = failure
    ? { ...facts, ok: false, ...failure }
    : { ...facts, ok: true, response: ended.response };
  try {
    options.onInvocation?.(invocation);
  } catch {
    // a listener's error is not the invocation's
  }
  return invocation;
}
