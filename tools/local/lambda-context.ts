import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';

/** Options of {@link lambdaContext}. */
export interface LambdaContextOptions {
  /** Name of the function, as in `context.functionName`. */
  readonly functionName: string;
  /** The function timeout in milliseconds; `getRemainingTimeInMillis()` counts down from it. */
  readonly timeoutMs: number;
  /** Region used in the function ARN. @default 'us-east-1' */
  readonly region?: string;
  /** `awsRequestId` of this invocation. @default a random UUID */
  readonly awsRequestId?: string;
  /** Memory size shown in `memoryLimitInMB`. @default 1024 */
  readonly memoryLimitInMB?: number;
  /** Clock in epoch milliseconds, for tests. @default Date.now */
  readonly now?: () => number;
}

const unsupported = (name: string) => () => {
  throw new Error(
    `context.${name}() is a deprecated Node.js 0.10 callback API and is not supported by the local runtime; return a value or a promise from the handler instead`,
  );
};

/**
 * Builds the Lambda `Context` of one local invocation. The deadline starts when this is called, so
 * `getRemainingTimeInMillis()` behaves as in Lambda: `timeoutMs` at the start, 0 at the timeout.
 *
 * @example
 * ```ts
 * const context = lambdaContext({ functionName: 'case-worker', timeoutMs: 30_000 });
 * await handler(event, context);
 * ```
 */
export function lambdaContext(options: LambdaContextOptions): Context {
  const now = options.now ?? Date.now;
  const deadline = now() + options.timeoutMs;
  const region = options.region ?? 'us-east-1';
  const awsRequestId = options.awsRequestId ?? randomUUID();
  const date = new Date(now()).toISOString().slice(0, 10).replaceAll('-', '/');
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: options.functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:000000000000:function:${options.functionName}`,
    memoryLimitInMB: String(options.memoryLimitInMB ?? 1024),
    awsRequestId,
    logGroupName: `/aws/lambda/${options.functionName}`,
    logStreamName: `${date}/[$LATEST]${awsRequestId.replaceAll('-', '')}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - now()),
    done: unsupported('done'),
    fail: unsupported('fail'),
    succeed: unsupported('succeed'),
  };
}
