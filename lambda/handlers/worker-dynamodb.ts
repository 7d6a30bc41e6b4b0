import { exampleDynamoHandlersFor } from '../domain/dynamodb/index.ts';
import { createDynamoWorkerFromConfig } from '../stores/dynamodb/index.ts';

/**
 * The deployable DynamoDB worker: the example domain's DynamoDB handlers (docs/dynamodb.md; the escalation example
 * too when `NOTIFICATION_URL` is set), wired from the environment at cold start by `createDynamoWorkerFromConfig`.
 * `SqsDatabaseWorker` deploys it for `store: 'dynamodb'`; its bundle holds no PostgreSQL code.
 */
export const handler = createDynamoWorkerFromConfig({ handlers: exampleDynamoHandlersFor });

/** The same handlers for the poller of an installed package's Fargate runtime (see worker.ts). */
export const handlers = exampleDynamoHandlersFor;
