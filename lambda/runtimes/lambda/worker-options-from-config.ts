import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { WorkerConfig } from '../../config.ts';
import { DEFAULT_METRICS_NAMESPACE } from '../../constants.ts';
import type { MessageHandler } from '../../stores/postgres/message-handler.ts';
import { newRecordTracer } from '../../tracing/new-record-tracer.ts';
import type { RecordTracer } from '../../tracing/record-tracer.ts';
import type { WorkerOptions } from '../worker-options.ts';

/**
 * Options of `createWorkerFromConfig` (`sqs-inbox-worker/postgres`, PostgreSQL handlers) and of
 * `createDynamoWorkerFromConfig` (`sqs-inbox-worker/dynamodb`, DynamoDB handlers).
 */
// biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
export interface WorkerFromConfigOptions<Handler = MessageHandler<any>> {
  /**
   * Domain handlers, one per messageType and schemaVersion; or a function that picks them from the configuration
   * (the shipped worker adds its escalation handler only when `NOTIFICATION_URL` is set).
   */
  readonly handlers: readonly Handler[] | ((config: WorkerConfig) => readonly Handler[]);
  /** The configuration. @default loadConfig() — the environment, read and validated once */
  readonly config?: WorkerConfig;
}

/**
 * The options every Lambda worker built from its configuration shares, whatever its store: the handlers (picked
 * from the configuration when `handlers` is a function), Powertools Logger and Metrics, the SQS and S3 clients made
 * on first use, the tracer when tracing is on, and every `WORKER_*` setting. The store is the caller's to add. A
 * module of its own, so that neither store's wiring imports the other's: a module in a bundle's graph ships its
 * `import()` targets even when its code is left out (the RDS signer of `createSql`).
 *
 * @internal
 */
export function workerOptionsFromConfig<Handler>(
  config: WorkerConfig,
  handlers: WorkerFromConfigOptions<Handler>['handlers'],
): Omit<WorkerOptions, 'sql' | 'store' | 'handlers'> & { readonly handlers: readonly Handler[] } {
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
  return {
    ...(config.tracing ? { tracer: preloadedTracer(serviceName) } : {}),
    consumer: config.consumer,
    handlers: typeof handlers === 'function' ? handlers(config) : handlers,
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
