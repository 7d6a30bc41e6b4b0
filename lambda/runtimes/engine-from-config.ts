import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { DatabaseProbe } from '../breaker/create-database-probe.ts';
import type { WorkerConfig } from '../config.ts';
import { DEFAULT_METRICS_NAMESPACE } from '../constants.ts';
import { ConfigError } from '../errors.ts';
import { createSql } from '../postgres/db.ts';
import type { SqsClientSource } from '../sqs/sqs-client-source.ts';
import type { DynamoMessageHandler } from '../stores/dynamodb/dynamo-handler.ts';
import type { MessageHandler } from '../stores/postgres/message-handler.ts';
import { newRecordTracer } from '../tracing/new-record-tracer.ts';
import type { RecordTracer } from '../tracing/record-tracer.ts';
import type { WorkerOptions } from './worker-options.ts';

/**
 * Domain handlers of a worker wired from its configuration: PostgreSQL handlers (`defineHandler`) or DynamoDB
 * handlers (`defineDynamoHandler`), or a function that picks them from the configuration (the shipped entries pick
 * the example domain of `WORKER_STORE`, and its escalation handler only with `NOTIFICATION_URL`).
 */
export type HandlersFromConfig =
  // biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
  | readonly MessageHandler<any>[]
  // biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
  | readonly DynamoMessageHandler<any>[]
  // biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
  | ((config: WorkerConfig) => readonly MessageHandler<any>[] | readonly DynamoMessageHandler<any>[]);

/** Options of {@link engineFromConfig}. @internal */
export interface EngineFromConfigOptions {
  readonly config: WorkerConfig;
  readonly handlers: HandlersFromConfig;
  /**
   * Which runtime runs the engine, for its record tracer (`POWERTOOLS_TRACE_ENABLED=true`): `lambda`, a subsegment
   * per record under the invocation's segment (`newRecordTracer`, Powertools Tracer); `poller`, a segment per record,
   * sent to the X-Ray daemon beside it (`newSegmentRecordTracer`).
   */
  readonly runtime: 'lambda' | 'poller';
  /** The runtime's SQS client, or a function that makes it on first use (the engine's backoff visibility changes). */
  readonly sqs?: SqsClientSource;
  /** @default a Powertools Logger of POWERTOOLS_SERVICE_NAME (or the consumer) */
  readonly logger?: Logger;
  /** A probe of the store without an answer after this long failed ({@link ConfiguredEngine.probe}). @default 5000 */
  readonly probeTimeoutMs?: number;
}

/** A worker's engine as its configuration gives it, returned by {@link engineFromConfig}. @internal */
export interface ConfiguredEngine {
  readonly store: WorkerConfig['store']['kind'];
  readonly logger: Logger;
  readonly metrics: Metrics;
  /**
   * The options of `createWorker` / `createBatchEngine`, the store's included: at once for PostgreSQL (an invalid
   * option then throws during the cold start), once the DynamoDB store's code is loaded for DynamoDB (it is imported
   * then, so a PostgreSQL worker never loads the DynamoDB SDK; a `ConfigError` rejects it).
   */
  readonly options: WorkerOptions | Promise<WorkerOptions>;
  /**
   * Resolves when the store answers the way the engine reaches it, within the probe timeout (the poller's pause):
   * PostgreSQL `select 1` on a pool of one of its own, thrown away after a probe that timed out
   * (`createDatabaseProbe`); DynamoDB one GetItem through the store's client (`probeDynamoStore`). Nothing is
   * connected before the first probe.
   */
  probe(): Promise<void>;
  /** Closes what the engine holds: the pool and the probe's (`graceful` waits up to 5 s), or the DynamoDB client. */
  close(mode: 'graceful' | 'now'): Promise<void>;
}

/**
 * The composition both runtimes share: from a worker's configuration (`loadConfig`), the store (a postgres.js pool of
 * `DB_POOL_SIZE`, or the DynamoDB client and `createDynamoStore` of `DYNAMODB_*`), its handlers, the S3 client of
 * `payloadRef` reads (made on first use: `S3_ENDPOINT`), the record tracer when `POWERTOOLS_TRACE_ENABLED=true`
 * (its loading started now, during a cold start's init), Powertools `Logger` and `Metrics` of
 * `POWERTOOLS_SERVICE_NAME` / `POWERTOOLS_METRICS_NAMESPACE`, and every `WORKER_*` setting. The Lambda adapter
 * (`createWorkerFromConfig`) adds its invocation rules, the poller (`startPollerFromConfig`) its receive loop; what a
 * runtime adds stays in it.
 *
 * @internal
 */
export function engineFromConfig(options: EngineFromConfigOptions): ConfiguredEngine {
  const { config } = options;
  const serviceName = process.env.POWERTOOLS_SERVICE_NAME ?? config.consumer;
  const logger = options.logger ?? new Logger({ serviceName });
  const metrics = new Metrics({
    namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? DEFAULT_METRICS_NAMESPACE,
    serviceName,
  });
  const probeTimeoutMs = options.probeTimeoutMs ?? 5000;
  // Made when a record first carries a payloadRef: cold starts without references never load the SDK's S3 code.
  const s3 = async () => {
    const { S3Client } = await import('../payloads/s3-sdk.ts');
    return new S3Client(config.s3Endpoint ? { endpoint: config.s3Endpoint, forcePathStyle: true } : {});
  };
  const common: Omit<WorkerOptions, 'sql' | 'store'> = {
    ...(config.tracing
      ? {
          tracer: preloadedTracer(() =>
            // The poller's tracer is a chunk of its own: a Lambda worker's cold start never loads it.
            options.runtime === 'poller'
              ? import('../tracing/new-segment-record-tracer.ts').then(({ newSegmentRecordTracer }) =>
                  newSegmentRecordTracer(serviceName),
                )
              : newRecordTracer(serviceName),
          ),
        }
      : {}),
    consumer: config.consumer,
    handlers: typeof options.handlers === 'function' ? options.handlers(config) : options.handlers,
    ...(options.sqs ? { sqs: options.sqs } : {}),
    s3,
    maxPayloadBytes: config.maxPayloadBytes,
    logger,
    metrics,
    terminalPolicy: config.terminalPolicy,
    recordConcurrency: config.recordConcurrency,
    commitMode: config.commitMode,
    backoff: { baseSeconds: config.backoffBaseSeconds, maxSeconds: config.backoffMaxSeconds },
    maxBusinessAttempts: config.maxBusinessAttempts,
    deadlineGuardMs: config.deadlineGuardMs,
    failInvocationOnFullBatchFailure: config.failInvocationOnFullBatchFailure,
  };
  const storeConfig = config.store;
  if (storeConfig.kind === 'dynamodb') {
    // A bundle the stack built for the PostgreSQL store holds no DynamoDB code: esbuild replaces the name with
    // "postgres", which makes the import dead code it leaves out (lib/worker-bundle-profile.ts). Unbundled, it is
    // unset. Loaded for a DynamoDB worker only: a PostgreSQL worker never loads the DynamoDB SDK.
    if (process.env.WORKER_BUNDLED_STORE !== 'postgres') {
      const loaded = Promise.all([
        import('../stores/dynamodb/dynamo-store-from-config.ts'),
        import('../stores/dynamodb/probe-dynamo-store.ts'),
      ]).then(([{ dynamoStoreFromConfig }, { probeDynamoStore }]) => ({
        store: dynamoStoreFromConfig(storeConfig),
        probeDynamoStore,
      }));
      // A ConfigError is the caller's (the first invocation, the poller's start), not an unhandled rejection.
      loaded.catch(() => {});
      return {
        store: 'dynamodb',
        logger,
        metrics,
        options: loaded.then(({ store }) => ({ ...common, store })),
        async probe() {
          const { store, probeDynamoStore } = await loaded;
          await probeDynamoStore(store, config.consumer, probeTimeoutMs);
        },
        async close() {
          (await loaded.catch(() => undefined))?.store.client.destroy();
        },
      };
    }
    throw new ConfigError(
      'WORKER_STORE is "dynamodb", but this worker was bundled for the PostgreSQL store, without the DynamoDB store code. Deploy it with store: "dynamodb" on SqsDatabaseWorker (the stage setting store), or remove WORKER_STORE from its environment.',
    );
  }
  const sql = createSql(config.database, { applicationName: config.consumer });
  // A pool of one of its own, made at the first probe (its code too): a Lambda worker, which never probes, neither
  // loads nor opens anything of it.
  let probe: DatabaseProbe | undefined;
  return {
    store: 'postgres',
    logger,
    metrics,
    options: { ...common, sql },
    async probe() {
      if (!probe) {
        const { createDatabaseProbe } = await import('../breaker/create-database-probe.ts');
        probe ??= createDatabaseProbe(
          () =>
            createSql({ ...config.database, poolSize: 1 }, { applicationName: `${config.consumer}-probe` }),
          probeTimeoutMs,
        );
      }
      await probe();
    },
    async close(mode) {
      await Promise.all([sql.end({ timeout: mode === 'graceful' ? 5 : 0 }), probe?.close()]);
    },
  };
}

/**
 * The record tracer `load` makes, its loading started now: during a Lambda cold start, whose init phase runs before
 * the first event arrives (or the poller's start). The first call gets that load; a later call (after a failed load)
 * loads again.
 */
function preloadedTracer(load: () => Promise<RecordTracer>): () => Promise<RecordTracer> {
  let preloaded: Promise<RecordTracer> | undefined = load();
  // Reported when the engine first asks for it (worker_tracer_unavailable), not as an unhandled rejection.
  preloaded.catch(() => {});
  return () => {
    const loading = preloaded ?? load();
    preloaded = undefined;
    return loading;
  };
}
