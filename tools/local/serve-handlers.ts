import postgres from 'postgres';
import { connectOptions } from '../../lambda/postgres/connect-options.ts';
import type { MessageHandler } from '../../lambda/stores/postgres/message-handler.ts';
import { describeLimits } from './describe-limits.ts';
import { exampleEnvelope } from './example-envelope.ts';
import { type OutputSource, startFunctionHost } from './function-host.ts';
import { LOCAL_ACCESS_KEY_IDS, localCredentials } from './iam/local-identities.ts';
import { loadHandlers } from './load-handlers.ts';
import type { LocalStack } from './local-stack.ts';
import { runOutboxRelayLoop } from './outbox-relay-loop.ts';
import { localWorkerFunction } from './stack-compute.ts';
import { startStackFunctionMapping } from './stack-function-mapping.ts';

/** Options of {@link serveHandlers}. */
export interface ServeHandlersOptions {
  /** The running local stack (migrated PostgreSQL, SQS, the queue and its DLQ). */
  readonly stack: LocalStack;
  /** The module of `--handlers`, relative to `cwd`; it exports `handlers`. */
  readonly handlersPath: string;
  /** Invocations at once (event source mapping maximum concurrency = execution environments). @default 4 */
  readonly concurrency?: number;
  /** The stage whose worker function (memory, timeout, variables) the handlers run as. @default 'dev' */
  readonly stage?: string;
  /** Overrides the stage's memory size (MB). */
  readonly memorySizeMb?: number;
  /** Every line the function's execution environments write (its logs). @default printed to this process's streams */
  readonly onOutput?: (line: string, source: OutputSource) => void;
  /** Each kill for memory or time, as Lambda reports it. */
  readonly onKill?: (line: string) => void;
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
  /** The limits the function runs within (`describeLimits`). */
  readonly limits: string;
  /** Stops polling (in-flight batches finish with their deletes) and the relay loop. */
  stop(): Promise<void>;
}

const shellQuote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;

/** Variables of your shell a local run of your handlers passes on, as a stage's `workerEnvironment` would set them. */
const PASSED_ON = /^(WORKER_|POWERTOOLS_)|^(NOTIFICATION_URL|PAYLOAD_MAX_BYTES)$/;

/**
 * Runs the handlers of your own module (`npm start -- --handlers <file>`) the way they are deployed: the module is
 * loaded here first (its `handlers` checked, and the example message built from them), then run as the stage's worker
 * function (`localWorkerFunction`: its memory, timeout and variables, pointed at the local stack; your shell's
 * `WORKER_*`, `POWERTOOLS_*`, `NOTIFICATION_URL` and `PAYLOAD_MAX_BYTES` on top) by a local function host — bundled as
 * the stack bundles a `workerEntry`, in execution environments killed above the function's memory or at its timeout
 * — behind the local event source mapping on the stack's queue, with the outbox relay loop publishing what they
 * enqueue to the same queue. The module's `handler` runs, or, without one, its `handlers` wired by
 * `createWorkerFromConfig`. Up to `concurrency` invocations run at once, each in its own environment.
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
  const stage = options.stage ?? 'dev';
  const shell = Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => PASSED_ON.test(entry[0]) && !!entry[1]),
  );
  const settings = await localWorkerFunction(stack, {
    stage,
    entry: file,
    memorySizeMb: options.memorySizeMb,
    environment: shell,
  });
  const consumer = settings.environment.WORKER_CONSUMER ?? settings.functionName;
  const host = await startFunctionHost({
    ...settings,
    onOutput:
      options.onOutput ??
      ((line, source) => (source.stream === 'stdout' ? process.stdout : process.stderr).write(`${line}\n`)),
  });
  const esm = await startStackFunctionMapping({
    stack,
    host,
    functionName: settings.functionName,
    concurrency,
    onKill: options.onKill,
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
    relayId: `${consumer}-local-relay`,
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
    consumer,
    exampleCommand,
    limits: describeLimits(stage, { worker: settings }),
    async stop() {
      stopRelay.abort();
      await Promise.allSettled([esm.stop(), relay]);
      await Promise.allSettled([host.stop(), relaySql.end({ timeout: 5 })]);
    },
  };
}
