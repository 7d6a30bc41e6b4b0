import postgres from 'postgres';
import { loadConfig } from '../../lambda/config.ts';
import { connectOptions } from '../../lambda/postgres/connect-options.ts';
import { createWorkerFromConfig } from '../../lambda/runtimes/lambda/create-worker-from-config.ts';
import type { MessageHandler } from '../../lambda/stores/postgres/message-handler.ts';
import { startEventSourceMapping } from './event-source-mapping.ts';
import { exampleEnvelope } from './example-envelope.ts';
import { LOCAL_ACCESS_KEY_IDS, localCredentials } from './iam/local-identities.ts';
import { loadHandlers } from './load-handlers.ts';
import type { LocalStack } from './local-stack.ts';
import { runOutboxRelayLoop } from './outbox-relay-loop.ts';

/** Options of {@link serveHandlers}. */
export interface ServeHandlersOptions {
  /** The running local stack (migrated PostgreSQL, SQS, the queue and its DLQ). */
  readonly stack: LocalStack;
  /** The module of `--handlers`, relative to `cwd`; it exports `handlers`. */
  readonly handlersPath: string;
  /** Invocations at once (event source mapping maximum concurrency = database connections). @default 4 */
  readonly concurrency?: number;
  /** Function timeout of the local invocations. @default 30000 (the construct's default) */
  readonly functionTimeoutMs?: number;
  /** @default process.cwd() */
  readonly cwd?: string;
  /** @default process.env */
  readonly env?: Record<string, string | undefined>;
}

/** Your handlers, running locally until {@link ServedHandlers.stop}. */
export interface ServedHandlers {
  /** Absolute path of the handlers module. */
  readonly file: string;
  // biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
  readonly handlers: readonly MessageHandler<any>[];
  /** `worker_inbox.consumer` of the local worker (`WORKER_CONSUMER`, default `case-worker`). */
  readonly consumer: string;
  /** An `aws sqs send-message` command line that sends a valid envelope for the first handler. */
  readonly exampleCommand: string;
  /** Stops polling (in-flight batches finish with their deletes) and the relay loop. */
  stop(): Promise<void>;
}

const shellQuote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;

/**
 * Runs the handlers of your own module (`npm start -- --handlers <file>`) the way they are deployed: the
 * environment the deployed function gets is set (`DATABASE_URL` and `SQS_ENDPOINT` of the local stack, `AWS_REGION`),
 * the module is loaded, and its `handlers` are wired by `createWorkerFromConfig` — every `WORKER_*` variable
 * applies — behind the local event source mapping on the stack's queue, with the outbox relay loop publishing what
 * they enqueue to the same queue. A pool of `concurrency` connections serves `concurrency` invocations at once.
 *
 * @throws HandlersModuleError when the module is missing or has no usable `handlers` export.
 */
export async function serveHandlers(options: ServeHandlersOptions): Promise<ServedHandlers> {
  const { stack } = options;
  const env = options.env ?? process.env;
  const concurrency = options.concurrency ?? 4;
  // What the deployed function's environment carries, pointed at the local stack; set before the module loads,
  // since an entry file calls createWorkerFromConfig (and so loadConfig) at its top level.
  // The worker signs in as its database role, as deployed (DB_USER of the function).
  env.DATABASE_URL = stack.databaseRoles?.url('worker') ?? stack.databaseUrl;
  env.SQS_ENDPOINT = stack.sqsEndpoint;
  env.AWS_REGION ||= stack.region;
  // As Lambda hands a function its role's credentials in these variables: the worker's local key, so the local IAM
  // layer evaluates its calls against the worker role.
  const workerKey = localCredentials('worker');
  env.AWS_ACCESS_KEY_ID = workerKey.accessKeyId;
  env.AWS_SECRET_ACCESS_KEY = workerKey.secretAccessKey;
  delete env.AWS_SESSION_TOKEN;
  const { file, handlers } = await loadHandlers(options.handlersPath, options.cwd);
  const config = loadConfig({ ...env, DB_POOL_SIZE: String(concurrency) });
  const handler = createWorkerFromConfig({ handlers, config });
  const esm = await startEventSourceMapping({
    // Lambda's event source mapping polls with the function's role.
    sqs: stack.clients('worker').sqs,
    queueUrl: stack.queues.queueUrl,
    handler,
    functionName: config.consumer,
    batchSize: 10,
    maxConcurrency: concurrency,
    waitTimeSeconds: 1,
    functionTimeoutMs: options.functionTimeoutMs ?? 30_000,
    region: stack.region,
  });
  const relaySql = postgres(stack.databaseRoles?.url('relay') ?? stack.databaseUrl, {
    ...connectOptions({ setting: 'DATABASE_URL', connectTimeoutSeconds: 10 }),
    max: 1,
    onnotice: () => {},
  });
  const stopRelay = new AbortController();
  const relay = runOutboxRelayLoop({
    sql: relaySql,
    sqs: stack.clients('relay').sqs,
    queueUrl: stack.queues.queueUrl,
    signal: stopRelay.signal,
    relayId: `${config.consumer}-local-relay`,
  });
  const first = handlers[0] as MessageHandler;
  const body = JSON.stringify(
    exampleEnvelope({
      messageType: first.messageType,
      schemaVersion: first.schemaVersion,
      idempotencyKey: `local:${first.messageType}:1`,
      aggregateType: first.messageType,
      aggregateId: '1',
      payload: {},
    }),
  );
  const exampleCommand = [
    `AWS_ACCESS_KEY_ID=${LOCAL_ACCESS_KEY_IDS.admin} AWS_SECRET_ACCESS_KEY=local aws sqs send-message`,
    `--endpoint-url ${stack.sqsEndpoint} --region ${stack.region}`,
    `--queue-url ${stack.queues.queueUrl}`,
    `--message-body ${shellQuote(body)}`,
  ].join(' ');
  return {
    file,
    handlers,
    consumer: config.consumer,
    exampleCommand,
    async stop() {
      stopRelay.abort();
      await Promise.allSettled([esm.stop(), relay]);
      await relaySql.end({ timeout: 5 });
    },
  };
}
