import { exampleDynamoHandlers } from '../domain/dynamodb/index.ts';
import { exampleHandlersFor } from '../domain/index.ts';
import { createWorkerFromConfig } from '../index.ts';

/**
 * The deployable worker: the example domain on the inbox engine, wired from the environment at cold start by
 * `createWorkerFromConfig` — the same call your own entry file makes (README, "A first handler"). Only what every
 * invocation needs is imported statically (see lib/bundled-function.ts: code splitting).
 */
export const handler = createWorkerFromConfig({
  // WORKER_STORE=dynamodb: the example domain's DynamoDB handlers (docs/dynamodb.md).
  handlers: (config) =>
    config.store.kind === 'dynamodb' ? exampleDynamoHandlers : exampleHandlersFor(config),
});
