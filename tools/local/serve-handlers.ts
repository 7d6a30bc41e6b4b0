import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { connectOptions } from '../../lambda/postgres/connect-options.ts';
import { writePollerMain } from '../../lib/runtimes/fargate/poller-entry-image.ts';
import { describeLimits } from './describe-limits.ts';
import { exampleEnvelope } from './example-envelope.ts';
import { type OutputSource, startFunctionHost } from './function-host.ts';
import { LOCAL_ACCESS_KEY_IDS, localCredentials } from './iam/local-identities.ts';
import { type LoadedHandlers, loadHandlers } from './load-handlers.ts';
import type { LocalStack } from './local-stack.ts';
import { runOutboxRelayLoop } from './outbox-relay-loop.ts';
import { startPollerTasks } from './poller-process.ts';
import { localPollerTask, localWorkerFunction } from './stack-compute.ts';
import { startStackFunctionMapping } from './stack-function-mapping.ts';

/** Options of {@link serveHandlers}. */
export interface ServeHandlersOptions {
  /**
   * The running local stack (migrated PostgreSQL, or DynamoDB Local and the table; SQS, the queue and its DLQ). Its
   * store decides the handlers the module must export: `defineHandler`'s, or `defineDynamoHandler`'s.
   */
  readonly stack: LocalStack;
  /**
   * What consumes the queue: the worker function behind the local event source mapping, or the poller's task
   * (`--runtime poller`: the poller's main around the module, as `SqsDatabaseWorker` builds it for Fargate).
   * @default 'event-source-mapping'
   */
  readonly runtime?: 'event-source-mapping' | 'poller';
  /** The module of `--handlers`, relative to `cwd`; it exports `handlers`. */
  readonly handlersPath: string;
  /** Invocations at once (event source mapping maximum concurrency = execution environments). @default 4 */
  readonly concurrency?: number;
  /**
   * The stage whose worker function or poller task (memory, timeout, variables) the handlers run as.
   * @default 'dev', 'fargate' with the poller; 'dev-dynamodb', 'fargate-dynamodb' on DynamoDB
   */
  readonly stage?: string;
  /** Overrides the stage's memory size (the function's MB, or the task's MiB). */
  readonly memorySizeMb?: number;
  /**
   * Every line the function's execution environments (with the poller, its tasks: `environmentId` is the task's
   * number) write, their logs. @default printed to this process's streams
   */
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
  readonly handlers: LoadedHandlers['handlers'];
  /** The consumer of the local worker's inbox (`WORKER_CONSUMER`, default `case-worker`). */
  readonly consumer: string;
  /** An `aws sqs send-message` command line that sends a valid envelope for the first handler. */
  readonly exampleCommand: string;
  /** The limits the function or the task runs within (`describeLimits`). */
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
  const poller = options.runtime === 'poller';
  const store = stack.dynamodb ? 'dynamodb' : 'postgres';
  // What the deployed component's environment carries, pointed at the local stack; set before the module loads,
  // since an entry file calls createWorkerFromConfig (and so loadConfig) at its top level.
  if (stack.dynamodb) {
    env.WORKER_STORE = 'dynamodb';
    env.DYNAMODB_TABLE = stack.dynamodb.tableName;
    env.DYNAMODB_ENDPOINT = stack.dynamodb.endpoint;
    delete env.DATABASE_URL;
  } else {
    // The worker signs in as its database role, as deployed (DB_USER of the function).
    env.DATABASE_URL = stack.databaseRoles?.url('worker') ?? stack.databaseUrl;
    delete env.WORKER_STORE;
  }
  env.SQS_ENDPOINT = stack.sqsEndpoint;
  env.AWS_REGION ||= stack.region;
  // As Lambda hands a function its role's credentials in these variables: the worker's local key, so the local IAM
  // layer evaluates its calls against the worker role.
  const workerKey = localCredentials('worker');
  env.AWS_ACCESS_KEY_ID = workerKey.accessKeyId;
  env.AWS_SECRET_ACCESS_KEY = workerKey.secretAccessKey;
  delete env.AWS_SESSION_TOKEN;
  const { file, handlers } = await loadHandlers(options.handlersPath, options.cwd, store);
  const stage = options.stage ?? localStage(poller, store === 'dynamodb');
  const shell = Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => PASSED_ON.test(entry[0]) && !!entry[1]),
  );
  const onOutput =
    options.onOutput ??
    ((line: string, source: OutputSource) => {
      (source.stream === 'stdout' ? process.stdout : process.stderr).write(`${line}\n`);
    });
  const own: OwnConsumerOptions = {
    stage,
    file,
    shell,
    concurrency,
    memorySizeMb: options.memorySizeMb,
    onOutput,
    onKill: options.onKill,
  };
  const consuming = poller ? await startOwnPoller(stack, own) : await startOwnFunction(stack, own);
  // The PostgreSQL outbox relay; on DynamoDB the relay reads the table's stream, which --handlers does not run.
  const relay = stack.dynamodb ? undefined : startRelay(stack, `${consuming.consumer}-local-relay`);
  const first = handlers[0] as LoadedHandlers['handlers'][number];
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
    consumer: consuming.consumer,
    exampleCommand,
    limits: consuming.limits,
    async stop() {
      await Promise.allSettled([consuming.stop(), relay?.stop()]);
    },
  };
}

/** The stage of a local run: `dev`, `fargate` (the poller), `dev-dynamodb`, `fargate-dynamodb`. */
function localStage(poller: boolean, dynamodb: boolean): string {
  return `${poller ? 'fargate' : 'dev'}${dynamodb ? '-dynamodb' : ''}`;
}

/**
 * What the module runs with, as the stage's worker function ({@link startOwnFunction}) or as its poller task
 * ({@link startOwnPoller}, which reports no kills of its own through `onKill`).
 */
interface OwnConsumerOptions {
  /** The stage whose function or task (memory, timeout, variables) the module runs as. */
  readonly stage: string;
  /** Absolute path of the handlers module. */
  readonly file: string;
  /** The variables of your shell passed on (`PASSED_ON`), on top of the stage's. */
  readonly shell: Record<string, string>;
  /** Invocations at once (the mapping's maximum concurrency), or the poller's `POLLER_CONCURRENCY`. */
  readonly concurrency: number;
  /** Overrides the stage's memory size: the function's MB, or the task's MiB. */
  readonly memorySizeMb: number | undefined;
  /** Every line the execution environments (the poller's tasks) write. */
  readonly onOutput: (line: string, source: OutputSource) => void;
  /** Each kill of an execution environment for memory or time, as Lambda reports it (the function only). */
  readonly onKill: ((line: string) => void) | undefined;
}

interface Consuming {
  readonly consumer: string;
  readonly limits: string;
  stop(): Promise<void>;
}

/** The module as the stage's worker function, bundled as the stack bundles a `workerEntry`, behind the mapping. */
async function startOwnFunction(stack: LocalStack, options: OwnConsumerOptions): Promise<Consuming> {
  const settings = await localWorkerFunction(stack, {
    stage: options.stage,
    entry: options.file,
    memorySizeMb: options.memorySizeMb,
    environment: options.shell,
  });
  const host = await startFunctionHost({ ...settings, onOutput: options.onOutput });
  const esm = await startStackFunctionMapping({
    stack,
    host,
    functionName: settings.functionName,
    concurrency: options.concurrency,
    onKill: options.onKill,
  });
  return {
    consumer: settings.environment.WORKER_CONSUMER ?? settings.functionName,
    limits: describeLimits(options.stage, { worker: settings }),
    async stop() {
      await Promise.allSettled([esm.stop()]);
      await host.stop();
    },
  };
}

/**
 * The module's `handlers` run by the stage's poller task: the poller main `SqsDatabaseWorker` bundles around a
 * `workerEntry` on Fargate (`writePollerMain`), bundled as its image bundles it and run with `node`.
 */
async function startOwnPoller(
  stack: LocalStack,
  options: Omit<OwnConsumerOptions, 'onKill'>,
): Promise<Consuming> {
  const task = await localPollerTask(stack, {
    stage: options.stage,
    memoryMiB: options.memorySizeMb,
    environment: { ...options.shell, POLLER_CONCURRENCY: String(options.concurrency) },
  });
  const dir = await mkdtemp(join(tmpdir(), 'own-poller-'));
  const tasks = await startPollerTasks({
    ...task,
    entry: writePollerMain(options.file, dir),
    onOutput: (line, source) => options.onOutput(line, { stream: source.stream, environmentId: source.task }),
  });
  return {
    consumer: task.environment.WORKER_CONSUMER ?? 'case-worker',
    limits: describeLimits(options.stage, { poller: task }),
    async stop() {
      await tasks.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The PostgreSQL outbox relay loop, publishing what the handlers enqueue to the stack's queue, with the relay's role. */
function startRelay(stack: LocalStack, relayId: string): { stop(): Promise<void> } {
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
    relayId,
  });
  return {
    async stop() {
      stopRelay.abort();
      await Promise.allSettled([relay]);
      await relaySql.end({ timeout: 5 });
    },
  };
}
