import { randomUUID } from 'node:crypto';
import { DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '../../lambda/config.ts';
import { RetryableError, TerminalError } from '../../lambda/errors.ts';
import { engineFromConfig } from '../../lambda/runtimes/engine-from-config.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import { postgresWiring } from '../../lambda/runtimes/postgres-wiring.ts';
import { defineHandler } from '../../lambda/stores/postgres/message-handler.ts';
import { renderLogQuery } from '../../lambda/worker/log-queries.ts';
import {
  evaluateInsightsQuery,
  type InsightsEvent,
} from '../../tools/logs-insights/evaluate-insights-query.ts';
import { captureOutput } from '../support/capture-output.ts';
import { createTestDatabase } from '../support/database.ts';
import { envelopeFactory, lambdaContext, receivedRecord, sqsEvent } from '../support/sqs-event.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

/**
 * The runbook queries (lambda/worker/log-queries.ts) against the worker's REAL log lines: the engine as its
 * configuration wires it (engineFromConfig: its Powertools logger, WORKER_VERSION), real PostgreSQL, messages
 * received from fauxqs and their retries redelivered by it after the backoff; the lines it wrote are evaluated with the
 * evaluator `sqs-worker logs` runs locally. A field renamed in the log line, or a query that reads a field the
 * worker does not write, fails here.
 */
const db = await createTestDatabase();
const fixture = await localQueueFixture();
const worker = fixture.as('worker');
const attemptsByKey = new Map<string, number>();

const probe = defineHandler({
  messageType: 'LogProbe',
  schemaVersion: 1,
  payload: z.object({ action: z.enum(['ok', 'retry-once', 'reject']) }),
  async handle({ envelope, payload }) {
    const attempt = (attemptsByKey.get(envelope.idempotencyKey) ?? 0) + 1;
    attemptsByKey.set(envelope.idempotencyKey, attempt);
    if (payload.action === 'reject') throw new TerminalError('PROBE_REJECTED', 'the probe says no');
    if (payload.action === 'retry-once' && attempt === 1) throw new RetryableError('PROBE_BUSY', 'try later');
    return undefined;
  },
});

/** Runs the worker on the queue as the event source mapping would, until every message is deleted. */
async function consumeAll(queueUrl: string, queueArn: string, expected: number): Promise<InsightsEvent[]> {
  const config = loadConfig({
    DATABASE_URL: db.url,
    WORKER_VERSION: 'v-logs-test',
    WORKER_BACKOFF_BASE_SECONDS: '1',
    WORKER_BACKOFF_MAX_SECONDS: '1',
  });
  // The test run's default is SILENT (vitest.config.ts): these lines are what is under test.
  const level = process.env.POWERTOOLS_LOG_LEVEL;
  process.env.POWERTOOLS_LOG_LEVEL = 'INFO';
  const engine = engineFromConfig({
    config,
    handlers: [probe],
    wiring: postgresWiring,
    newTracer: () => Promise.reject(new Error('no tracing in this test')),
    sqs: async () => worker.sqs,
  });
  const handler = createWorker(engine.options);
  process.env.POWERTOOLS_LOG_LEVEL = level;
  let deleted = 0;
  const captured = await captureOutput(async () => {
    const deadline = Date.now() + 60_000;
    while (deleted < expected && Date.now() < deadline) {
      const { Messages = [] } = await worker.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          MessageSystemAttributeNames: ['All'],
        }),
      );
      if (Messages.length === 0) continue;
      const response = await handler(
        sqsEvent(Messages.map((m) => receivedRecord(m, queueArn))),
        lambdaContext(),
      );
      const failed = new Set((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
      for (const message of Messages.filter((m) => !failed.has(m.MessageId as string))) {
        await worker.sqs.send(
          new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle }),
        );
        deleted += 1;
      }
    }
  });
  await engine.close('now');
  expect(deleted).toBe(expected);
  return captured.raw
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => ({ fields: JSON.parse(line) as Record<string, unknown>, message: line }));
}

describe("The runbook queries on the worker's real log lines", () => {
  it('answers each question: by key, by message id, by code, slowest, retries by aggregate, by messageType', async () => {
    // Prepare: one success, one retried once then completed, one rejected (terminal, quarantined).
    const queues = await fixture.queues({ visibilityTimeoutSeconds: 5 });
    const queueArn = `arn:aws:sqs:us-east-1:000000000000:${queues.queueUrl.split('/').at(-1)}`;
    const run = randomUUID().slice(0, 8);
    const envelopes = (['ok', 'retry-once', 'reject'] as const).map((action) =>
      envelopeFactory({
        messageType: 'LogProbe',
        idempotencyKey: `probe:${run}:${action}`,
        aggregateId: `AGG-${run}-${action}`,
        payload: { action },
      }),
    );
    await fixture.send(
      queues.queueUrl,
      envelopes.map((envelope) => JSON.stringify(envelope)),
    );
    const [ok, retried, rejected] = envelopes as [
      (typeof envelopes)[0],
      (typeof envelopes)[0],
      (typeof envelopes)[0],
    ];

    // Act
    const events = await consumeAll(queues.queueUrl, queueArn, 3);
    const query = (name: Parameters<typeof renderLogQuery>[0], values = {}) =>
      evaluateInsightsQuery(renderLogQuery(name, values), events);

    // Assess: the retried key, oldest first — the failure, then the completion after the redelivery.
    const byKey = query('by-idempotency-key', { idempotencyKey: retried.idempotencyKey });
    expect(byKey).toMatchObject([
      {
        result: 'RETRYABLE_FAILURE',
        failureCode: 'PROBE_BUSY',
        receiveCount: '1',
        level: 'WARN',
        messageType: 'LogProbe',
        workerVersion: 'v-logs-test',
      },
      { result: 'COMPLETED', receiveCount: '2', level: 'INFO', workerVersion: 'v-logs-test' },
    ]);
    const messageId = byKey[0]?.messageId as string;
    expect(byKey[1]?.messageId).toBe(messageId);
    expect(query('by-message-id', { messageId }).map((row) => row.result)).toEqual([
      'RETRYABLE_FAILURE',
      'COMPLETED',
    ]);
    // The terminal one, by its code.
    expect(query('by-failure-code', { failureCode: 'PROBE_REJECTED' })).toMatchObject([
      { idempotencyKey: rejected.idempotencyKey, result: 'TERMINAL_FAILURE', level: 'ERROR' },
    ]);
    // The slowest two of the four record lines, slowest first.
    const slowest = query('slowest', { limit: 2 });
    const every = query('slowest', { limit: 100 });
    expect(every).toHaveLength(4);
    expect(slowest.map((row) => Number(row.processingMs))).toEqual(
      every.map((row) => Number(row.processingMs)).slice(0, 2),
    );
    expect(Number(slowest[0]?.processingMs)).toBeGreaterThanOrEqual(Number(slowest[1]?.processingMs));
    // Retries by aggregate: only the retried one's aggregate, once.
    expect(query('retries-by-aggregate')).toEqual([
      { aggregateId: retried.aggregateId, retries: '1', avgAttempts: '1' },
    ]);
    // Per messageType: four record lines, two of them failures.
    expect(query('by-message-type')).toMatchObject([
      { messageType: 'LogProbe', records: '4', failures: '2' },
    ]);
    expect(query('by-idempotency-key', { idempotencyKey: ok.idempotencyKey })).toHaveLength(1);
  }, 90_000);
});
