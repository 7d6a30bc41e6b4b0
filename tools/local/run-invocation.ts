import type { Context, SQSEvent } from 'aws-lambda';
import type {
  EventSourceMappingHandler,
  EventSourceMappingHooks,
  EventSourceMappingInvoker,
  InvocationReport,
} from './event-source-mapping.ts';
import { lambdaContext } from './lambda-context.ts';

/**
 * How one invocation ended: the handler's response, or why the whole batch failed.
 *
 * @internal
 */
export interface InvocationEnding {
  readonly response?: unknown;
  readonly reason?: 'error' | 'timeout' | 'out-of-memory';
  readonly detail?: string;
  readonly errorType?: string;
  readonly function?: InvocationReport['function'];
}

/**
 * The function the mapping invokes and its settings.
 *
 * @internal
 */
export interface InvocationTarget {
  readonly functionName: string;
  readonly functionTimeoutMs: number;
  readonly awsRegion: string;
  readonly hooks: EventSourceMappingHooks;
  /** Exactly one of handler and invoker. */
  readonly handler?: EventSourceMappingHandler;
  readonly invoker?: EventSourceMappingInvoker;
}

class InvocationTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`Task timed out after ${(timeoutMs / 1000).toFixed(2)} seconds`);
    this.name = 'InvocationTimeoutError';
  }
}

/**
 * Runs one batch's event: `beforeInvoke`, then the handler in this process (raced against the function timeout)
 * or the invoker (its own execution environment). Never throws: a throw, a timeout or a kill is the ending.
 *
 * @internal
 */
export async function runInvocation(
  target: InvocationTarget,
  event: SQSEvent,
  awsRequestId: string,
): Promise<InvocationEnding> {
  try {
    const context = lambdaContext({
      functionName: target.functionName,
      timeoutMs: target.functionTimeoutMs,
      region: target.awsRegion,
      awsRequestId,
      ...(target.invoker ? { memoryLimitInMB: target.invoker.memorySizeMb } : {}),
    });
    if (target.invoker) {
      await target.hooks.beforeInvoke?.(event, context);
      return await callInvoker(target.invoker, event, awsRequestId);
    }
    return { response: await callHandler(target, event, context) };
  } catch (error) {
    return {
      reason: error instanceof InvocationTimeoutError ? 'timeout' : 'error',
      detail: describeError(error),
      errorType: error instanceof Error ? error.name : typeof error,
    };
  }
}

async function callInvoker(
  invoker: EventSourceMappingInvoker,
  event: SQSEvent,
  awsRequestId: string,
): Promise<InvocationEnding> {
  const invocation = await invoker.invoke(event, { awsRequestId });
  const facts = {
    environmentId: invocation.environmentId,
    coldStart: invocation.coldStart,
    ...(invocation.initDurationMs !== undefined ? { initDurationMs: invocation.initDurationMs } : {}),
    maxMemoryUsedMb: invocation.maxMemoryUsedMb,
    memorySizeMb: invocation.memorySizeMb,
    report: invocation.report,
  };
  return invocation.ok
    ? { response: invocation.response, function: facts }
    : {
        reason: invocation.reason,
        detail: invocation.detail,
        errorType: invocation.errorType,
        function: facts,
      };
}

/** `beforeInvoke` and the handler raced against the function timeout; a timed-out one keeps running, its result ignored. */
async function callHandler(target: InvocationTarget, event: SQSEvent, context: Context): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const run = (async () => {
      await target.hooks.beforeInvoke?.(event, context);
      return (target.handler as EventSourceMappingHandler)(event, context);
    })();
    run.catch(() => {}); // a late rejection after a timeout is not unhandled
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new InvocationTimeoutError(target.functionTimeoutMs)),
        target.functionTimeoutMs,
      );
    });
    return await Promise.race([run, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * An error as `Name: message` for logs and reports.
 *
 * @internal
 */
export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
