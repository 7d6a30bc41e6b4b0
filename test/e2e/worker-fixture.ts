import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent } from 'aws-lambda';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { createWorker, type WorkerOptions } from '../../lambda/runtimes/lambda/create-worker.ts';
import { OutcomeRecorder } from '../../tools/local/outcome-recorder.ts';
import type { TestDatabase } from '../support/database.ts';

process.env.POWERTOOLS_METRICS_DISABLED = 'true'; // no EMF lines in the test output

/**
 * The real worker (example domain) with its outcomes recorded (`onOutcome`), plus the body of every delivery it
 * received. It connects as the worker's database role when `db` has the roles (`createTestDatabase({ roles: true })`),
 * as its owner otherwise.
 */
export function exampleWorker(
  db: TestDatabase,
  sqs: SQSClient,
  options: { pool?: number } & Partial<Omit<WorkerOptions, 'sql' | 'sqs' | 'handlers'>> = {},
) {
  const { pool = 2, ...overrides } = options;
  // The worker role's lock_timeout (5 s, as deployed) lowered to 200 ms, so a held case row fails fast.
  const clientOptions = { max: pool, prepare: false, connection: { lock_timeout: 200 } };
  const sql = db.rolesProvisioned ? db.as('worker', clientOptions) : db.client(clientOptions);
  const outcomes = new OutcomeRecorder();
  const worker = createWorker({
    consumer: 'case-worker',
    handlers: exampleHandlers,
    sql,
    sqs,
    logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
    metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
    recordConcurrency: 1,
    backoff: { baseSeconds: 1, maxSeconds: 2 },
    onOutcome: outcomes.onOutcome,
    ...overrides,
  });
  const deliveries: { body: string; at: number; receiveCount: number }[] = [];
  const handler = (event: SQSEvent, context: Context) => {
    const at = Date.now();
    for (const record of event.Records) {
      deliveries.push({
        body: record.body,
        at,
        receiveCount: Number(record.attributes.ApproximateReceiveCount),
      });
    }
    return worker(event, context);
  };
  return { handler, outcomes, deliveries, sql };
}
