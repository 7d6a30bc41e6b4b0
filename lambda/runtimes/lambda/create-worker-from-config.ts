import { loadConfig } from '../../config.ts';
import { ConfigError } from '../../errors.ts';
import type { MessageHandler } from '../../stores/postgres/message-handler.ts';
import { newRecordTracer } from '../../tracing/new-record-tracer.ts';
import { engineFromConfig, type WorkerFromConfigOptions } from '../engine-from-config.ts';
import { postgresWiring } from '../postgres-wiring.ts';
import { createWorker, type WorkerHandler } from './create-worker.ts';
import { lazySqsClient } from './lazy-sqs-client.ts';

/** Options of {@link createWorkerFromConfig}: PostgreSQL handlers (`defineHandler`). */
// biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
export type PostgresWorkerFromConfigOptions = WorkerFromConfigOptions<MessageHandler<any>>;

/**
 * Builds a Lambda SQS worker from the environment, wired the way the shipped worker (`lambda/handlers/worker.ts`)
 * is: `loadConfig()` once at cold start (a `ConfigError` names every invalid variable), and the composition the
 * poller shares (`engineFromConfig`): a postgres.js client of `DB_POOL_SIZE` at module scope, Powertools `Logger`
 * and `Metrics` of `POWERTOOLS_SERVICE_NAME` / `POWERTOOLS_METRICS_NAMESPACE`, every `WORKER_*` setting
 * ([configuration.md](../docs/configuration.md)). Its own: an SQS client for backoff visibility changes that honours
 * `SQS_ENDPOINT` (a local emulator) and is made only when a record first needs a backoff, so most cold starts never
 * load the SDK's SQS code. With `POWERTOOLS_TRACE_ENABLED=true` each record gets an X-Ray subsegment (Powertools
 * Tracer, loaded during the cold start then, and never otherwise: docs/tracing.md).
 *
 * Call it at module scope of your entry file; deploy that file with the construct's `workerEntry` prop (or the
 * `workerEntry` stage setting) and run its `handlers` locally with `npm start -- --handlers <file>`. It builds a
 * PostgreSQL worker only, so that its bundle holds no DynamoDB code: a DynamoDB worker is built by
 * `createDynamoWorkerFromConfig` (`sqs-inbox-worker/dynamodb`).
 *
 * @throws ConfigError when a variable is invalid, or when `WORKER_STORE` is `dynamodb`.
 *
 * @example
 * ```ts
 * import { defineHandler } from 'sqs-inbox-worker';
 * import { createWorkerFromConfig } from 'sqs-inbox-worker/postgres';
 *
 * export const handlers = [invoiceIssued];
 * export const handler = createWorkerFromConfig({ handlers });
 * ```
 */
export function createWorkerFromConfig(options: PostgresWorkerFromConfigOptions): WorkerHandler {
  const config = options.config ?? loadConfig();
  if (config.store.kind === 'dynamodb') {
    throw new ConfigError(
      'WORKER_STORE is "dynamodb", but createWorkerFromConfig builds a PostgreSQL worker. Build a DynamoDB worker with createDynamoWorkerFromConfig from sqs-inbox-worker/dynamodb (the shipped entry is lambda/handlers/worker-dynamodb.ts, which SqsDatabaseWorker deploys for store: "dynamodb"), or remove WORKER_STORE from its environment.',
    );
  }
  const engine = engineFromConfig({
    config,
    handlers: options.handlers,
    wiring: postgresWiring,
    newTracer: newRecordTracer,
    sqs: lazySqsClient(config),
  });
  return createWorker(engine.options);
}
