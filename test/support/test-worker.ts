import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type postgres from 'postgres';
import { exampleDynamoHandlers } from '../../lambda/domain/dynamodb/index.ts';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { createWorker, type WorkerOptions } from '../../lambda/runtimes/lambda/create-worker.ts';
import type { DynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';

/** A worker over the example domain with quiet-by-default telemetry; `overrides` replace any option. */
export function exampleWorker(sql: postgres.Sql, overrides: Partial<WorkerOptions> = {}) {
  return createWorker({
    consumer: 'case-worker',
    handlers: exampleHandlers,
    sql,
    logger: new Logger({ serviceName: 'case-worker' }),
    metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
    ...overrides,
  });
}

/** A worker over the example domain's DynamoDB handlers on `store`, with silent telemetry; `overrides` replace any option. */
export function exampleDynamoWorker(store: DynamoStore, overrides: Partial<WorkerOptions> = {}) {
  return createWorker({
    consumer: 'case-worker',
    handlers: exampleDynamoHandlers,
    store,
    logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
    metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
    ...overrides,
  });
}
