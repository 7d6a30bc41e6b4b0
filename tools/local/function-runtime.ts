import type { SQSEvent } from 'aws-lambda';
import { lambdaContext } from './lambda-context.ts';

/** What the function host sends its execution environment: one invocation. @internal */
export interface InvokeMessage {
  readonly type: 'invoke';
  readonly awsRequestId: string;
  readonly event: SQSEvent;
  /** When the invocation times out, epoch ms (the host's clock is the child's). */
  readonly deadline: number;
  readonly functionName: string;
  readonly memoryLimitInMB: number;
  readonly region: string;
}

/** What the execution environment answers, over the IPC channel, as JSON. @internal */
export type RuntimeMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'init-error'; readonly errorType: string; readonly errorMessage: string }
  | { readonly type: 'response'; readonly awsRequestId: string; readonly response: unknown }
  | {
      readonly type: 'error';
      readonly awsRequestId: string;
      readonly errorType: string;
      readonly errorMessage: string;
    };

type Handler = (event: SQSEvent, context: ReturnType<typeof lambdaContext>) => unknown;

const errorFields = (error: unknown) => ({
  errorType: error instanceof Error ? error.name : typeof error,
  errorMessage: error instanceof Error ? error.message : String(error),
});

/**
 * The runtime of a local execution environment (the child process of `function-host.ts`), in the role of Lambda's
 * Node.js runtime: it loads the function's module (the init phase), takes its `handler` — or, for a module of
 * `npm start -- --handlers` that exports only `handlers`, wires them with `createWorkerFromConfig` (or, with
 * `WORKER_STORE=dynamodb`, `createDynamoWorkerFromConfig`) as an entry file would — and then runs one invocation at a time as the host sends them over the IPC channel, answering with the
 * handler's JSON response or its error. A module that fails to load answers `init-error` and the process exits,
 * as Lambda resets an environment whose init failed.
 *
 * @internal
 */
export async function serveInvocations(load: () => Promise<Record<string, unknown>>): Promise<void> {
  const send = process.send?.bind(process);
  if (!send) throw new Error('serveInvocations runs in a child process started with an IPC channel');
  let handler: Handler;
  try {
    const module = await load();
    if (typeof module.handler === 'function') handler = module.handler as Handler;
    else if (Array.isArray(module.handlers) && process.env.WORKER_STORE === 'dynamodb') {
      const { createDynamoWorkerFromConfig } = await import(
        '../../lambda/runtimes/lambda/create-dynamo-worker-from-config.ts'
      );
      handler = createDynamoWorkerFromConfig({
        handlers: module.handlers as Parameters<typeof createDynamoWorkerFromConfig>[0]['handlers'],
      }) as Handler;
    } else if (Array.isArray(module.handlers)) {
      const { createWorkerFromConfig } = await import(
        '../../lambda/runtimes/lambda/create-worker-from-config.ts'
      );
      handler = createWorkerFromConfig({
        handlers: module.handlers as Parameters<typeof createWorkerFromConfig>[0]['handlers'],
      }) as Handler;
    } else {
      throw Object.assign(
        new Error('the module exports neither `handler` (a function) nor `handlers` (a list)'),
        { name: 'Runtime.HandlerNotFound' },
      );
    }
  } catch (error) {
    send({ type: 'init-error', ...errorFields(error) } satisfies RuntimeMessage, () => process.exit(1));
    return;
  }
  process.on('message', (message: InvokeMessage) => {
    if (message?.type !== 'invoke') return;
    const { awsRequestId } = message;
    const context = lambdaContext({
      functionName: message.functionName,
      timeoutMs: Math.max(0, message.deadline - Date.now()),
      region: message.region,
      awsRequestId,
      memoryLimitInMB: message.memoryLimitInMB,
    });
    Promise.resolve()
      .then(() => handler(message.event, context))
      .then(
        // As Lambda's runtime serializes it: undefined becomes null.
        (response) =>
          send({ type: 'response', awsRequestId, response: response ?? null } satisfies RuntimeMessage),
        (error: unknown) =>
          send({ type: 'error', awsRequestId, ...errorFields(error) } satisfies RuntimeMessage),
      );
  });
  // The host gone (its IPC channel closed): nothing will invoke this environment again.
  process.on('disconnect', () => process.exit(0));
  send({ type: 'ready' } satisfies RuntimeMessage);
}
