import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type postgres from 'postgres';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { createWorker, type WorkerOptions } from '../../lambda/runtimes/lambda/create-worker.ts';

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
