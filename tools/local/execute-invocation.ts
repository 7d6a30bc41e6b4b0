import type { SQSEvent } from 'aws-lambda';
import { describeExit, killEnvironment } from './function-environment.ts';
import type { FunctionHostOptions } from './function-host.ts';
import type { Environment, HostState } from './function-host-state.ts';
import type { InvokeMessage } from './function-runtime.ts';
import { resetPeakMemory } from './process-memory.ts';
import { watchMemory } from './watch-memory.ts';

/** How an invocation in an environment ended, as the host saw it. @internal */
export type Ending =
  | { readonly kind: 'response'; readonly response: unknown }
  | { readonly kind: 'error'; readonly errorType: string; readonly errorMessage: string }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'out-of-memory' }
  | { readonly kind: 'exit'; readonly code: number | null; readonly signal: NodeJS.Signals | null };

/** A failed invocation's reason, error type and text. @internal */
export interface Failure {
  readonly reason: 'error' | 'timeout' | 'out-of-memory';
  readonly errorType: string;
  readonly detail: string;
}

/**
 * Sends the event to a ready environment and waits for how it ends: its answer, or the kill at the timeout or above
 * the memory size, or its exit. The peak is the environment's over the invocation (its high-water mark is reset
 * first).
 *
 * @internal
 */
export async function execute(
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
      killEnvironment(host, environment);
      settle({ kind: 'out-of-memory' });
    },
  });
  const timer = setTimeout(() => {
    killEnvironment(host, environment);
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
    killEnvironment(host, environment);
    ending = { kind: 'out-of-memory' };
  }
  const peakBytes = watch.stop();
  if (ending.kind !== 'response' && ending.kind !== 'error') await environment.exited;
  return { ending, peakBytes };
}

/** Lambda's report of a failed ending: its reason, error type and text. @internal */
export function failureOf(
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
