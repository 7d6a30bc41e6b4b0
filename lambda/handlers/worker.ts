import { exampleHandlersFor } from '../domain/index.ts';
import { createWorkerFromConfig } from '../stores/postgres/index.ts';

/**
 * The deployable PostgreSQL worker: the example domain on the inbox engine, wired from the environment at cold start
 * by `createWorkerFromConfig` — the same call your own entry file makes (README, "A first handler"). Only what every
 * invocation needs is imported statically (see lib/bundled-function.ts: code splitting). `SqsDatabaseWorker` deploys
 * it for `store: 'postgres'`; the DynamoDB store has its own entry (`worker-dynamodb.ts`), so neither bundle holds
 * the other store's code.
 */
export const handler = createWorkerFromConfig({ handlers: exampleHandlersFor });

/**
 * The same handlers for the poller: an installed package's Fargate runtime bundles its poller main around this
 * entry (the repository's image builds `bin/poller.ts` instead, from the `Dockerfile`).
 */
export const handlers = exampleHandlersFor;
