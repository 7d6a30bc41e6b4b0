#!/usr/bin/env node
// npm run poller: the long-running SQS poller (ECS/Fargate) over the example domain, configured by environment.
import { exampleDynamoHandlersFor } from '../lambda/domain/dynamodb/index.ts';
import { exampleHandlersFor } from '../lambda/domain/index.ts';
import { runPollerProcess } from '../lambda/runtimes/poller/run-poller-process.ts';

// As the Lambda workers (lambda/handlers/worker.ts, worker-dynamodb.ts): WORKER_STORE=dynamodb runs the example
// domain's DynamoDB handlers; either store's get the escalation example only with NOTIFICATION_URL.
await runPollerProcess(
  async () => (config) =>
    config.store.kind === 'dynamodb' ? exampleDynamoHandlersFor(config) : exampleHandlersFor(config),
);
