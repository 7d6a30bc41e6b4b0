import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { localEndpointDefaults } from '../aws/local-endpoint-defaults.ts';
import type { WorkerConfig } from '../config.ts';
import { DEFAULT_METRICS_NAMESPACE } from '../constants.ts';
import type { SqsClientSource } from '../sqs/sqs-client-source.ts';
import type { RecordTracer } from '../tracing/record-tracer.ts';
import type { StoreWiring, WiredStore } from './store-wiring.ts';
import type { WorkerOptions } from './worker-options.ts';

/**
 * Options of the workers wired from their configuration — `createWorkerFromConfig` (`sqs-inbox-worker/postgres`,
 * PostgreSQL handlers), `createDynamoWorkerFromConfig` (`sqs-inbox-worker/dynamodb`, DynamoDB handlers) — and of the
 * poller's `startPollerFromConfig` (the handlers of `WORKER_STORE`).
 */
// biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
export interface WorkerFromConfigOptions<Handler = any> {
  /**
   * Domain handlers, one per messageType and schemaVersion; or a function that picks them from the configuration
   * (the shipped worker adds its escalation handler only when `NOTIFICATION_URL` is set).
   */
  readonly handlers: readonly Handler[] | ((config: WorkerConfig) => readonly Handler[]);
  /** The configuration. @default loadConfig() — the environment, read and validated once */
  readonly config?: WorkerConfig;
}

/** Options of {@link engineFromConfig}. @internal */
export interface EngineFromConfigOptions<Part> {
  readonly config: WorkerConfig;
  readonly handlers: WorkerFromConfigOptions['handlers'];
  /** The store, wired from the configuration: `postgresWiring` or `dynamoWiring` (the caller's pick). */
  readonly wiring: StoreWiring<Part>;
  /**
   * Makes the record tracer when `POWERTOOLS_TRACE_ENABLED=true`: a subsegment per record under a Lambda
   * invocation's segment (`newRecordTracer`), or a segment per record sent to the X-Ray daemon beside the poller.
   */
  readonly newTracer: (serviceName: string) => Promise<RecordTracer>;
  /** The runtime's SQS client, or a function that makes it on first use (the engine's backoff visibility changes). */
  readonly sqs?: SqsClientSource;
  /**
   * @default a Powertools Logger of POWERTOOLS_SERVICE_NAME (or the consumer), with `workerVersion` (the
   * configuration's) as a persistent key of every line
   */
  readonly logger?: Logger;
  /** A probe of the store without an answer after this long failed ({@link ConfiguredEngine.probe}). @default 5000 */
  readonly probeTimeoutMs?: number;
}

/** A worker's engine as its configuration gives it, returned by {@link engineFromConfig}. @internal */
export interface ConfiguredEngine<Part> extends Omit<WiredStore<Part>, 'part'> {
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** The options of `createWorker` / `createBatchEngine`, the store's part (`sql` or `store`) included. */
  readonly options: WorkerOptions & Part;
}

/**
 * The composition every runtime shares: from a worker's configuration (`loadConfig`), the store its `wiring` makes
 * (a postgres.js pool of `DB_POOL_SIZE`, or the DynamoDB store of `DYNAMODB_*`), its handlers, the S3 client of
 * `payloadRef` reads (made on first use: `S3_ENDPOINT`), the record tracer when `POWERTOOLS_TRACE_ENABLED=true`
 * (its loading started now, during a cold start's init), Powertools `Logger` and `Metrics` of
 * `POWERTOOLS_SERVICE_NAME` / `POWERTOOLS_METRICS_NAMESPACE` (the logger's lines carry `workerVersion`), and every `WORKER_*` setting. The Lambda adapters add
 * their invocation rules, the poller its receive loop.
 *
 * The store and the tracer are parameters, so that this module names neither store: a Lambda bundle holds the code
 * of the one store its entry wires (a module in a bundle's graph ships its `import()` targets even when its code is
 * left out), and the poller picks its wiring from `WORKER_STORE`.
 *
 * @internal
 */
export function engineFromConfig<Part>(options: EngineFromConfigOptions<Part>): ConfiguredEngine<Part> {
  const { config } = options;
  const serviceName = process.env.POWERTOOLS_SERVICE_NAME ?? config.consumer;
  // Every line names the code that wrote it (WORKER_VERSION: the deployed asset's hash), so a change of behaviour
  // can be put next to a deploy (docs/operations.md, "Deploy correlation").
  const logger =
    options.logger ?? new Logger({ serviceName, persistentKeys: { workerVersion: config.workerVersion } });
  const metrics = new Metrics({
    namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? DEFAULT_METRICS_NAMESPACE,
    serviceName,
  });
  // Made when a record first carries a payloadRef: cold starts without references never load the SDK's S3 code.
  const s3 = async () => {
    const { S3Client } = await import('../payloads/s3-sdk.ts');
    return new S3Client(
      config.s3Endpoint
        ? { ...localEndpointDefaults(config.s3Endpoint), endpoint: config.s3Endpoint, forcePathStyle: true }
        : {},
    );
  };
  const { part, ...wired } = options.wiring(config, { probeTimeoutMs: options.probeTimeoutMs ?? 5000 });
  const common: Omit<WorkerOptions, 'sql' | 'store'> = {
    ...(config.tracing ? { tracer: preloadedTracer(() => options.newTracer(serviceName)) } : {}),
    consumer: config.consumer,
    workerVersion: config.workerVersion,
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
    retryPolicy: config.retryPolicy,
    maxBusinessAttempts: config.maxBusinessAttempts,
    deadlineGuardMs: config.deadlineGuardMs,
    failInvocationOnFullBatchFailure: config.failInvocationOnFullBatchFailure,
  };
  return { ...wired, logger, metrics, options: { ...common, ...part } as WorkerOptions & Part };
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
