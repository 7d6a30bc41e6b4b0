#!/usr/bin/env node
// npm run poller: the long-running SQS poller (ECS/Fargate) over the example domain, configured by environment.
import { exampleDynamoHandlersFor } from '../lambda/domain/dynamodb/index.ts';
import { exampleHandlersFor } from '../lambda/domain/index.ts';
import { ConfigError } from '../lambda/errors.ts';
import { startPollerFromConfig, stopOnSignals } from '../lambda/runtimes/poller/index.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const running = await startPollerFromConfig({
  // As the Lambda workers (lambda/handlers/worker.ts, worker-dynamodb.ts): WORKER_STORE=dynamodb runs the example
  // domain's DynamoDB handlers; either store's get the escalation example only with NOTIFICATION_URL.
  handlers: (config) =>
    config.store.kind === 'dynamodb' ? exampleDynamoHandlersFor(config) : exampleHandlersFor(config),
}).catch((error: unknown) => {
  // A bad variable or an unusable queue: one message naming it, exit 2 (the container does not restart-loop silently).
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`poller not started: ${error.message}\n`);
  process.exit(2);
});
stopOnSignals({
  poller: running.poller,
  stopTimeoutMs: running.config.poller.stopTimeoutSeconds * 1000,
  close: running.close,
  exit: (code) => process.exit(code),
  logger: running.logger,
});
