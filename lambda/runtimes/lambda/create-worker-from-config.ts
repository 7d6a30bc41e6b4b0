import { loadConfig, type WorkerConfig } from '../../config.ts';
import { engineFromConfig, type HandlersFromConfig } from '../engine-from-config.ts';
import { createWorker, type WorkerHandler } from './create-worker.ts';

/** Options of {@link createWorkerFromConfig}. */
export interface WorkerFromConfigOptions {
  /**
   * Domain handlers, one per messageType and schemaVersion; or a function that picks them from the configuration
   * (the shipped worker adds its escalation handler only when `NOTIFICATION_URL` is set).
   */
  readonly handlers: HandlersFromConfig;
  /** The configuration. @default loadConfig() — the environment, read and validated once */
  readonly config?: WorkerConfig;
}

/**
 * Builds a Lambda SQS worker from the environment, wired the way the shipped worker (`lambda/handlers/worker.ts`)
 * is: `loadConfig()` once at cold start (a `ConfigError` names every invalid variable), and the composition the
 * poller shares (`engineFromConfig`): a postgres.js client of `DB_POOL_SIZE` at module scope, or with
 * `WORKER_STORE=dynamodb` the DynamoDB store of `DYNAMODB_TABLE` (its code loaded during the cold start, awaited by
 * the first invocation), Powertools `Logger` and `Metrics` of `POWERTOOLS_SERVICE_NAME` /
 * `POWERTOOLS_METRICS_NAMESPACE`, every `WORKER_*` setting ([configuration.md](../docs/configuration.md)). Its own:
 * an SQS client for backoff visibility changes that honours `SQS_ENDPOINT` (a local emulator) and is made only when
 * a record first needs a backoff, so most cold starts never load the SDK's SQS code. With
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
  // Made (once, by the engine) when a record first needs a backoff: the SDK's SQS code is a chunk of its own.
  const sqs = async () => {
    const { SQSClient } = await import('../../sqs/sqs-sdk.ts');
    return new SQSClient(
      config.sqsEndpoint ? { endpoint: config.sqsEndpoint, useQueueUrlAsEndpoint: false } : {},
    );
  };
  const engine = engineFromConfig({ config, handlers: options.handlers, runtime: 'lambda', sqs });
  const { options: workerOptions } = engine;
  if (!(workerOptions instanceof Promise)) return createWorker(workerOptions);
  // The DynamoDB store's code loads during the cold start; the first invocation waits for it.
  const ready = workerOptions.then(createWorker);
  // A ConfigError is thrown by the first invocation (and fails it), not left as an unhandled rejection.
  ready.catch(() => {});
  return async (event, context) => (await ready)(event, context);
}
