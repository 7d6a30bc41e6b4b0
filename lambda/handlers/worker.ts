import { exampleDynamoHandlers } from '../domain/dynamodb/index.ts';
import { caseEscalationRequested, exampleHandlers } from '../domain/index.ts';
import { createSql, createWorkerFromConfig, httpNotificationProvider } from '../index.ts';

/**
 * The deployable worker: the example domain on the inbox engine, wired from the environment at cold start by
 * `createWorkerFromConfig` — the same call your own entry file makes (README, "A first handler"). Only what every
 * invocation needs is imported statically (see lib/bundled-function.ts: code splitting).
 */
export const handler = createWorkerFromConfig({
  // The escalation example calls an external service through the effect log, which needs its own connection.
  // WORKER_STORE=dynamodb: the example domain's DynamoDB handlers (docs/dynamodb.md).
  handlers: (config) =>
    config.store.kind === 'dynamodb'
      ? exampleDynamoHandlers
      : config.notificationUrl
        ? [
            ...exampleHandlers,
            caseEscalationRequested({
              effectsSql: createSql(
                { ...config.database, poolSize: 1 },
                { applicationName: `${config.consumer}-effects` },
              ),
              provider: httpNotificationProvider({ url: config.notificationUrl }),
            }),
          ]
        : exampleHandlers,
});
