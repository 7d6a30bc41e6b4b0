import type { Failure } from './execute-invocation.ts';
import type { FunctionHostOptions, FunctionInvocation } from './function-host.ts';
import { type Environment, type HostState, MIB } from './function-host-state.ts';

/** What every invocation reports, as Lambda's REPORT line does. @internal */
export interface InvocationFacts {
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

/** How an invocation ended, as `finish` turns it into the caller's result. @internal */
export interface Ended {
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

/**
 * The caller's result of an ended invocation: counted in the stats, with its REPORT line, and handed to the
 * `onInvocation` listener.
 *
 * @internal
 */
export function finish(host: HostState, ended: Ended): FunctionInvocation {
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
