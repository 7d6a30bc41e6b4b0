import { loadConfig } from '../../config.ts';
import type { DynamoMessageHandler } from '../../stores/dynamodb/dynamo-handler.ts';
import { newRecordTracer } from '../../tracing/new-record-tracer.ts';
import { dynamoWiring } from '../dynamo-wiring.ts';
import { engineFromConfig, type WorkerFromConfigOptions } from '../engine-from-config.ts';
import { createStoreWorker, type WorkerHandler } from './create-worker.ts';
import { lazySqsClient } from './lazy-sqs-client.ts';

/** Options of {@link createDynamoWorkerFromConfig}: DynamoDB handlers (`defineDynamoHandler`). */
// biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
export type DynamoWorkerFromConfigOptions = WorkerFromConfigOptions<DynamoMessageHandler<any>>;

/**
 * Builds a Lambda SQS worker on the DynamoDB store from the environment, wired the way the shipped DynamoDB worker
 * (`lambda/handlers/worker-dynamodb.ts`) is: `loadConfig()` once at cold start, the store of `DYNAMODB_TABLE`
 * (`DYNAMODB_ENDPOINT` for DynamoDB Local; the inbox items' TTL from `RETENTION_SOURCE_SECONDS` +
 * `RETENTION_DLQ_SECONDS`), and everything else as `createWorkerFromConfig` (`sqs-inbox-worker/postgres`) wires it,
 * through the composition both runtimes share (`engineFromConfig`).
 *
 * The DynamoDB worker's own function: it imports no PostgreSQL code, so its bundle holds no postgres.js, as the
 * PostgreSQL worker's holds no DynamoDB code. Deploy your entry with `store: 'dynamodb'` and `workerEntry`.
 *
 * @throws ConfigError when a variable is invalid, or when `WORKER_STORE` is not `dynamodb`.
 *
 * @example
 * ```ts
 * import { createDynamoWorkerFromConfig, defineDynamoHandler } from 'sqs-inbox-worker/dynamodb';
 *
 * export const handlers = [orderPlaced];
 * export const handler = createDynamoWorkerFromConfig({ handlers });
 * ```
 */
export function createDynamoWorkerFromConfig(options: DynamoWorkerFromConfigOptions): WorkerHandler {
  const config = options.config ?? loadConfig();
  // dynamoWiring refuses a configuration of another store (a ConfigError naming WORKER_STORE and the other wiring).
  const engine = engineFromConfig({
    config,
    handlers: options.handlers,
    wiring: dynamoWiring,
    newTracer: newRecordTracer,
    sqs: lazySqsClient(config),
  });
  return createStoreWorker(engine.options);
}
