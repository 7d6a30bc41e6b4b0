/**
 * `sqs-inbox-worker/dynamodb`: a worker on the DynamoDB store — its handler kind (`defineDynamoHandler`: a
 * function of the payload that returns its writes, committed with the inbox item in one TransactWriteItems), the
 * Lambda worker wired from the environment (`createDynamoWorkerFromConfig`), the store for your own wiring
 * (`createDynamoStore`, given to `createWorker` or `createBatchEngine` of `sqs-inbox-worker/runtime`), and the
 * canary handler every DynamoDB worker registers, and the outbox item of an event for the same TransactWriteItems
 * as the state change it announces (`dynamoOutboxWrite`; docs/dynamodb.md, docs/outbox.md). The errors a handler throws are in
 * `sqs-inbox-worker`.
 *
 * Only re-exports: it gathers the DynamoDB side of the runtimes for the store's users; nothing under `lambda/` but the
 * deployable entries imports it. A bundle built from it holds no PostgreSQL code of the worker's (no postgres.js).
 *
 * @example
 * ```ts
 * import { createDynamoWorkerFromConfig, defineDynamoHandler } from 'sqs-inbox-worker/dynamodb';
 *
 * export const handlers = [orderPlaced];
 * export const handler = createDynamoWorkerFromConfig({ handlers });
 * ```
 *
 * @packageDocumentation
 */

export { canaryDynamoHandler } from '../../canary/canary-dynamo-handler.ts';
export {
  createDynamoWorkerFromConfig,
  type DynamoWorkerFromConfigOptions,
} from '../../runtimes/lambda/create-dynamo-worker-from-config.ts';
export {
  type PerformDynamoExternalEffectOptions,
  performDynamoExternalEffect,
} from './dynamo-external-effect.ts';
export {
  type ConditionFailedRule,
  type DynamoHandlerContext,
  type DynamoHandlerResult,
  type DynamoMessageHandler,
  type DynamoTransactItem,
  type DynamoWrite,
  defineDynamoHandler,
  MAX_DOMAIN_WRITES,
} from './dynamo-handler.ts';
export {
  DYNAMO_OUTBOX_MAX_ENVELOPE_BYTES,
  type DynamoOutboxWrite,
  dynamoOutboxWrite,
} from './dynamo-outbox-write.ts';
export { createDynamoStore, type DynamoStore, type DynamoStoreOptions } from './dynamo-store.ts';
export { DynamoTransactionTooLargeError } from './errors.ts';
