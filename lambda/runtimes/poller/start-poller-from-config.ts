import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { SQSClient } from '@aws-sdk/client-sqs';
import { createDatabaseProbe } from '../../breaker/create-database-probe.ts';
import type { WorkerConfig } from '../../config.ts';
import { DEFAULT_METRICS_NAMESPACE } from '../../constants.ts';
import { createSql } from '../../postgres/db.ts';
import type { MessageHandler } from '../../stores/postgres/message-handler.ts';
import { createBatchEngine } from '../create-batch-engine.ts';
import { loadPollerConfig, type PollerProcessConfig } from './poller-config.ts';
import { type Poller, type PollerEvent, type PollerHooks, startPoller } from './start-poller.ts';

/** Options of {@link startPollerFromConfig}. */
export interface PollerFromConfigOptions {
  /** Domain handlers, or a function that picks them from the worker configuration (as `createWorkerFromConfig`). */
  readonly handlers: // biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
    | readonly MessageHandler<any>[]
    // biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
    | ((config: WorkerConfig) => readonly MessageHandler<any>[]);
  /** The configuration. @default loadPollerConfig() — the environment, read and validated once */
  readonly config?: PollerProcessConfig;
  /** Failure injection (the local runtime). */
  readonly hooks?: PollerHooks;
  /** Every poller event (the local runtime, tests). */
  readonly onEvent?: (event: PollerEvent) => void;
  /** Logger of the engine and the poller. @default a Powertools Logger of POWERTOOLS_SERVICE_NAME (or the consumer) */
  readonly logger?: Logger;
}

/** A poller started by {@link startPollerFromConfig}, with what its process needs to shut down. */
export interface PollerProcess {
  readonly poller: Poller;
  readonly config: PollerProcessConfig;
  readonly logger: Logger;
  /** Closes the database connections (and the probe's): `graceful` waits up to 5 s, `now` ends them at once. */
  close(mode: 'graceful' | 'now'): Promise<void>;
}

/**
 * Starts the long-running poller wired from the environment the way the Lambda worker is
 * (`createWorkerFromConfig`): `loadPollerConfig()` (every `WORKER_*`, `DB_*` and `POLLER_*` variable), a
 * postgres.js pool of `DB_POOL_SIZE`, the engine over the handlers, Powertools `Logger` and `Metrics` (EMF on
 * stdout, the namespace and service of the Lambda worker), an SQS client that honours `SQS_ENDPOINT` (or the AWS
 * SDK's endpoint variables), and a database probe with a connection of its own for the pause.
 *
 * @example
 * ```ts
 * const running = await startPollerFromConfig({ handlers: exampleHandlers });
 * stopOnSignals({ poller: running.poller, stopTimeoutMs: 30_000, close: running.close, exit: process.exit, logger: running.logger });
 * ```
 */
export async function startPollerFromConfig(options: PollerFromConfigOptions): Promise<PollerProcess> {
  const config = options.config ?? loadPollerConfig();
  const { worker, poller: settings } = config;
  const serviceName = process.env.POWERTOOLS_SERVICE_NAME ?? worker.consumer;
  const logger = options.logger ?? new Logger({ serviceName });
  const metrics = new Metrics({
    namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? DEFAULT_METRICS_NAMESPACE,
    serviceName,
  });
  const sql = createSql(worker.database, { applicationName: worker.consumer });
  const probe = createDatabaseProbe(
    () => createSql({ ...worker.database, poolSize: 1 }, { applicationName: `${worker.consumer}-probe` }),
    settings.probeTimeoutMs,
  );
  const sqs = new SQSClient(
    settings.sqsEndpoint ? { endpoint: settings.sqsEndpoint, useQueueUrlAsEndpoint: false } : {},
  );
  const s3 = async () => {
    const { S3Client } = await import('../../payloads/s3-sdk.ts');
    return new S3Client(worker.s3Endpoint ? { endpoint: worker.s3Endpoint, forcePathStyle: true } : {});
  };
  const close = async (mode: 'graceful' | 'now') => {
    await Promise.all([sql.end({ timeout: mode === 'graceful' ? 5 : 0 }), probe.close()]);
    sqs.destroy();
  };
  let poller: Poller | undefined;
  const engine = createBatchEngine({
    consumer: worker.consumer,
    handlers: typeof options.handlers === 'function' ? options.handlers(worker) : options.handlers,
    sql,
    sqs,
    s3,
    maxPayloadBytes: worker.maxPayloadBytes,
    logger,
    metrics,
    terminalPolicy: worker.terminalPolicy,
    recordConcurrency: worker.recordConcurrency,
    commitMode: worker.commitMode,
    backoff: { baseSeconds: worker.backoffBaseSeconds, maxSeconds: worker.backoffMaxSeconds },
    maxBusinessAttempts: worker.maxBusinessAttempts,
    deadlineGuardMs: worker.deadlineGuardMs,
    // The moment a record settles its heartbeat stops, and it is deleted or backed off at the next renewal.
    onRecordSettled: (outcome) => poller?.recordSettled(outcome),
  });
  try {
    poller = await startPoller({
      sqs,
      queueUrl: settings.queueUrl,
      processBatch: engine.processBatch,
      concurrency: settings.concurrency,
      batchSize: settings.batchSize,
      waitSeconds: settings.waitSeconds,
      visibilitySeconds: settings.visibilitySeconds,
      maxExtensionSeconds: settings.maxExtensionSeconds,
      batchTimeoutSeconds: settings.batchTimeoutSeconds,
      commitMode: worker.commitMode,
      probe,
      pause: {
        probeTimeoutMs: settings.probeTimeoutMs,
        probeBackoffBaseMs: settings.probeBackoffBaseMs,
        probeBackoffMaxMs: settings.probeBackoffMaxMs,
        halfOpenMs: settings.halfOpenMs,
      },
      logger,
      metrics,
      hooks: options.hooks,
      onEvent: options.onEvent,
    });
    return { poller, config, logger, close };
  } catch (error) {
    await close('now');
    throw error;
  }
}
