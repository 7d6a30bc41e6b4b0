import type { Logger } from '@aws-lambda-powertools/logger';
import { SQSClient } from '@aws-sdk/client-sqs';
import { localEndpointDefaults } from '../../aws/local-endpoint-defaults.ts';
import { createBatchEngine } from '../create-batch-engine.ts';
import { dynamoWiring } from '../dynamo-wiring.ts';
import { engineFromConfig, type WorkerFromConfigOptions } from '../engine-from-config.ts';
import { postgresWiring } from '../postgres-wiring.ts';
import { loadPollerConfig, type PollerProcessConfig } from './poller-config.ts';
import { type Poller, type PollerEvent, type PollerHooks, startPoller } from './start-poller.ts';

/** Options of {@link startPollerFromConfig}. */
export interface PollerFromConfigOptions {
  /**
   * Domain handlers of the store of `WORKER_STORE` (`defineHandler`, or `defineDynamoHandler` with
   * `WORKER_STORE=dynamodb`), or a function that picks them from the worker configuration (as
   * `createWorkerFromConfig`).
   */
  readonly handlers: WorkerFromConfigOptions['handlers'];
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
  /**
   * Closes the store's connections (the pool and the probe's: `graceful` waits up to 5 s, `now` ends them at once;
   * DynamoDB: its client) and the SQS client.
   */
  close(mode: 'graceful' | 'now'): Promise<void>;
}

/**
 * Starts the long-running poller wired from the environment the way the Lambda worker is
 * (`createWorkerFromConfig`), through the composition both share (`engineFromConfig`): `loadPollerConfig()` (every
 * `WORKER_*`, `DB_*`, `DYNAMODB_*` and `POLLER_*` variable), the store of `WORKER_STORE` (a postgres.js pool of
 * `DB_POOL_SIZE`, or the DynamoDB store of `DYNAMODB_TABLE`), the engine over the handlers, Powertools `Logger` and
 * `Metrics` (EMF on stdout, the namespace and service of the Lambda worker), and the store's probe for the pause (a
 * connection of its own for PostgreSQL, a GetItem for DynamoDB). With `POWERTOOLS_TRACE_ENABLED=true` each sampled
 * record gets an X-Ray segment, sent to the daemon beside the poller (docs/tracing.md). Its own: an SQS client that
 * honours `SQS_ENDPOINT` (or the AWS SDK's endpoint variables) and the receive loop.
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
  const sqs = new SQSClient(
    settings.sqsEndpoint
      ? {
          ...localEndpointDefaults(settings.sqsEndpoint),
          endpoint: settings.sqsEndpoint,
          useQueueUrlAsEndpoint: false,
        }
      : {},
  );
  const configured = engineFromConfig<{ sql: unknown } | { store: unknown }>({
    config: worker,
    handlers: options.handlers,
    // The poller's image holds both stores: it wires the one of WORKER_STORE.
    wiring: worker.store.kind === 'dynamodb' ? dynamoWiring : postgresWiring,
    // A segment per record, sent to the X-Ray daemon beside the poller: a chunk loaded only with tracing on.
    newTracer: (serviceName) =>
      import('../../tracing/new-segment-record-tracer.ts').then(({ newSegmentRecordTracer }) =>
        newSegmentRecordTracer(serviceName),
      ),
    sqs,
    probeTimeoutMs: settings.probeTimeoutMs,
    ...(options.logger ? { logger: options.logger } : {}),
  });
  const { logger, metrics } = configured;
  const close = async (mode: 'graceful' | 'now') => {
    await configured.close(mode);
    sqs.destroy();
  };
  let poller: Poller | undefined;
  try {
    const engine = createBatchEngine({
      ...(await configured.options),
      // The moment a record settles its heartbeat stops, and it is deleted or backed off at the next renewal.
      onRecordSettled: (outcome) => poller?.recordSettled(outcome),
    });
    poller = await startPoller({
      sqs,
      queueUrl: settings.queueUrl,
      processBatch: engine.processBatch,
      concurrency: settings.concurrency,
      adaptiveConcurrency: {
        enabled: settings.adaptiveConcurrency === 'on',
        floor: settings.concurrencyFloor,
      },
      batchSize: settings.batchSize,
      waitSeconds: settings.waitSeconds,
      visibilitySeconds: settings.visibilitySeconds,
      maxExtensionSeconds: settings.maxExtensionSeconds,
      batchTimeoutSeconds: settings.batchTimeoutSeconds,
      commitMode: worker.commitMode,
      probe: configured.probe,
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
