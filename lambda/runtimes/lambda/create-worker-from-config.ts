import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { loadConfig, type WorkerConfig } from '../../config.ts';
import { DEFAULT_METRICS_NAMESPACE } from '../../constants.ts';
import { ConfigError } from '../../errors.ts';
import { createSql } from '../../postgres/db.ts';
import type { DynamoMessageHandler } from '../../stores/dynamodb/dynamo-handler.ts';
import type { MessageHandler } from '../../stores/postgres/message-handler.ts';
import { newRecordTracer } from '../../tracing/new-record-tracer.ts';
import type { RecordTracer } from '../../tracing/record-tracer.ts';
import { createWorker, type WorkerHandler, type WorkerOptions } from './create-worker.ts';

/** Options of {@link createWorkerFromConfig}. */
export interface WorkerFromConfigOptions {
  /**
   * Domain handlers, one per messageType and schemaVersion; or a function that picks them from the configuration
   * (the shipped worker adds its escalation handler only when `NOTIFICATION_URL` is set).
   */
  readonly handlers: // biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
    | readonly MessageHandler<any>[]
    // biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
    | readonly DynamoMessageHandler<any>[]
    // biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
    | ((config: WorkerConfig) => readonly MessageHandler<any>[] | readonly DynamoMessageHandler<any>[]);
  /** The configuration. @default loadConfig() — the environment, read and validated once */
  readonly config?: WorkerConfig;
}

/**
 * Builds a Lambda SQS worker from the environment, wired the way the shipped worker (`lambda/handlers/worker.ts`)
 * is: `loadConfig()` once at cold start (a `ConfigError` names every invalid variable), a postgres.js client of
 * `DB_POOL_SIZE` at module scope, Powertools `Logger` and `Metrics` of `POWERTOOLS_SERVICE_NAME` /
 * `POWERTOOLS_METRICS_NAMESPACE`, every `WORKER_*` setting ([configuration.md](../docs/configuration.md)), and an
 * SQS client for backoff visibility changes that honours `SQS_ENDPOINT` (a local emulator) and is made only
 * when a record first needs a backoff, so most cold starts never load the SDK's SQS code. With
 * `POWERTOOLS_TRACE_ENABLED=true` each record gets an X-Ray subsegment (Powertools Tracer, loaded during the cold
 * start then, and never otherwise: docs/tracing.md).
 *
 * Call it at module scope of your entry file; deploy that file with the construct's `workerEntry` prop (or the
 * `workerEntry` stage setting) and run its `handlers` locally with `npm start -- --handlers <file>`.
 *
 * @example
 * ```ts
 * import { createWorkerFromConfig, defineHandler } from 'sqs-inbox-worker';
 *
 * export const handlers = [invoiceIssued];
 * export const handler = createWorkerFromConfig({ handlers });
 * ```
 */
export function createWorkerFromConfig(options: WorkerFromConfigOptions): WorkerHandler {
  const config = options.config ?? loadConfig();
  const serviceName = process.env.POWERTOOLS_SERVICE_NAME ?? config.consumer;
  // Made (once, by the engine) when a record first needs a backoff: the SDK's SQS code is a chunk of its own.
  const sqs = async () => {
    const { SQSClient } = await import('../../sqs/sqs-sdk.ts');
    return new SQSClient(
      config.sqsEndpoint ? { endpoint: config.sqsEndpoint, useQueueUrlAsEndpoint: false } : {},
    );
  };
  // Made when a record first carries a payloadRef: cold starts without references never load the SDK's S3 code.
  const s3 = async () => {
    const { S3Client } = await import('../../payloads/s3-sdk.ts');
    return new S3Client(config.s3Endpoint ? { endpoint: config.s3Endpoint, forcePathStyle: true } : {});
  };
  const workerOptions: Omit<WorkerOptions, 'sql' | 'store'> = {
    ...(config.tracing ? { tracer: preloadedTracer(serviceName) } : {}),
    consumer: config.consumer,
    handlers: typeof options.handlers === 'function' ? options.handlers(config) : options.handlers,
    sqs,
    s3,
    maxPayloadBytes: config.maxPayloadBytes,
    logger: new Logger({ serviceName }),
    metrics: new Metrics({
      namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? DEFAULT_METRICS_NAMESPACE,
      serviceName,
    }),
    terminalPolicy: config.terminalPolicy,
    recordConcurrency: config.recordConcurrency,
    commitMode: config.commitMode,
    backoff: { baseSeconds: config.backoffBaseSeconds, maxSeconds: config.backoffMaxSeconds },
    maxBusinessAttempts: config.maxBusinessAttempts,
    deadlineGuardMs: config.deadlineGuardMs,
    failInvocationOnFullBatchFailure: config.failInvocationOnFullBatchFailure,
  };
  if (config.store.kind === 'dynamodb') {
    // A bundle the stack built for the PostgreSQL store holds no DynamoDB code: esbuild replaces the name with
    // "postgres", which makes the import dead code it leaves out (lib/worker-bundle-profile.ts). Unbundled, it is
    // unset. Loaded for a DynamoDB worker only: a PostgreSQL worker never loads the DynamoDB SDK.
    if (process.env.WORKER_BUNDLED_STORE !== 'postgres') {
      const storeConfig = config.store;
      const ready = import('../../stores/dynamodb/dynamo-store-from-config.ts').then(
        ({ dynamoStoreFromConfig }) =>
          createWorker({ ...workerOptions, store: dynamoStoreFromConfig(storeConfig) }),
      );
      // A ConfigError is thrown by the first invocation (and fails it), not left as an unhandled rejection.
      ready.catch(() => {});
      return async (event, context) => (await ready)(event, context);
    }
    throw new ConfigError(
      'WORKER_STORE is "dynamodb", but this worker was bundled for the PostgreSQL store, without the DynamoDB store code. Deploy it with store: "dynamodb" on SqsDatabaseWorker (the stage setting store), or remove WORKER_STORE from its environment.',
    );
  }
  return createWorker({
    ...workerOptions,
    sql: createSql(config.database, { applicationName: config.consumer }),
  });
}

/**
 * The record tracer, its loading started now: during a Lambda cold start, whose init phase runs before the first
 * event arrives. The first call gets that load; a later call (after a failed load) loads again.
 */
function preloadedTracer(serviceName: string): () => Promise<RecordTracer> {
  let preloaded: Promise<RecordTracer> | undefined = newRecordTracer(serviceName);
  // Reported when the engine first asks for it (worker_tracer_unavailable), not as an unhandled rejection.
  preloaded.catch(() => {});
  return () => {
    const loading = preloaded ?? newRecordTracer(serviceName);
    preloaded = undefined;
    return loading;
  };
}
