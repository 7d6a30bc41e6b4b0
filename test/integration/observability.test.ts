import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { describe, expect, it } from 'vitest';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { captureOutput, emfSum } from '../support/capture-output.ts';
import { createTestDatabase } from '../support/database.ts';
import { envelopeFactory, lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';
import { alwaysRetryable } from '../support/test-handlers.ts';
import { exampleWorker } from '../support/test-worker.ts';

const db = await createTestDatabase();

/** A value that must never appear in any log line: it only exists inside payloads. */
const SECRET = `secret-${randomUUID().slice(0, 18)}`;

function telemetry() {
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
  const metrics = new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' });
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  return { logger: new Logger({ serviceName: 'case-worker', logLevel: 'DEBUG' }), metrics };
}

describe('Observability: one log line per record, EMF counts per outcome, never a payload value', () => {
  it('logs the pattern document fields for every record and counts each outcome once', async () => {
    // Prepare: a batch with every kind of outcome.
    const paymentId = `PAY-${randomUUID()}`;
    const payment = envelopeFactory({
      idempotencyKey: `pay:${paymentId}`,
      payload: { paymentId, accountId: SECRET, amount: '1.00', currency: 'EUR' },
    });
    const duplicate = payment;
    const mismatch = {
      ...payment,
      messageId: 'other',
      payload: { paymentId, accountId: `${SECRET}-2`, amount: '2.00', currency: 'EUR' },
    };
    const caseId = `CASE-${randomUUID()}`;
    const newer = envelopeFactory({
      messageType: 'CaseStageChanged',
      idempotencyKey: `s5:${caseId}`,
      payload: { caseId, stage: SECRET, version: 5 },
    });
    const older = envelopeFactory({
      messageType: 'CaseStageChanged',
      idempotencyKey: `s4:${caseId}`,
      payload: { caseId, stage: SECRET, version: 4 },
    });
    const retry = envelopeFactory({
      messageType: 'AlwaysRetryable',
      idempotencyKey: `r:${randomUUID()}`,
      payload: { note: SECRET },
    });
    const notDue = envelopeFactory({
      idempotencyKey: `later:${randomUUID()}`,
      attemptPolicy: { notBefore: new Date(Date.now() + 600_000).toISOString() },
      payload: { paymentId: `PAY-${randomUUID()}`, accountId: SECRET, amount: '1', currency: 'EUR' },
    });
    const poison = `{"not json ${SECRET}`;
    const records = [payment, duplicate, mismatch, newer, older, retry, notDue].map((e) =>
      sqsRecordFactory(e),
    );
    records.push(sqsRecordFactory(poison));
    const { logger, metrics } = telemetry();
    const worker = exampleWorker(db.sql, {
      handlers: [...exampleHandlers, alwaysRetryable],
      logger,
      metrics,
    });

    // Act
    const { result, lines, raw } = await captureOutput(() => worker(sqsEvent(records), lambdaContext()));

    // Assess: the response
    expect(result?.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(
      [records[5]?.messageId, records[6]?.messageId].sort(),
    );
    // one log line per record, with the pattern document's fields
    const recordLines = lines.filter((line) => String(line.message).startsWith('worker_message_'));
    expect(recordLines).toHaveLength(records.length);
    const completed = recordLines.find((line) => line.messageId === records[0]?.messageId);
    expect(completed).toMatchObject({
      level: 'INFO',
      message: 'worker_message_completed',
      queue: 'case-worker-queue',
      messageType: 'PaymentCaptured',
      idempotencyKey: `pay:${paymentId}`,
      aggregateId: payment.aggregateId,
      correlationId: payment.correlationId,
      receiveCount: 1,
      result: 'COMPLETED',
    });
    expect(typeof completed?.processingMs).toBe('number');
    expect(typeof completed?.dbTransactionMs).toBe('number');
    expect(recordLines.map((line) => line.result).sort()).toEqual(
      [
        'COMPLETED',
        'DUPLICATE',
        'TERMINAL_FAILURE',
        'COMPLETED',
        'STALE_VERSION_SKIPPED',
        'RETRYABLE_FAILURE',
        'NOT_YET_DUE',
        'TERMINAL_FAILURE',
      ].sort(),
    );
    // never a payload value, anywhere in the output
    expect(raw).not.toContain(SECRET);
    // EMF counts equal the outcomes
    expect(emfSum(lines, 'Completed')).toBe(2);
    expect(emfSum(lines, 'Duplicate')).toBe(1);
    expect(emfSum(lines, 'StaleVersionSkipped')).toBe(1);
    expect(emfSum(lines, 'RetryableFailure')).toBe(1);
    expect(emfSum(lines, 'TerminalFailure')).toBe(2);
    expect(emfSum(lines, 'HashMismatch')).toBe(1);
    expect(emfSum(lines, 'Quarantined')).toBe(2);
    expect(emfSum(lines, 'NotYetDue')).toBe(1);
    expect(emfSum(lines, 'DeadlineDeferred')).toBe(0);
    expect(emfSum(lines, 'BatchSize')).toBe(8);
    const emf = lines.find((line) => '_aws' in line) as {
      _aws: { CloudWatchMetrics: Array<{ Dimensions: string[][]; Namespace: string }> };
    };
    expect(emf._aws.CloudWatchMetrics[0]?.Namespace).toBe('SqsInboxWorkerTest');
    expect(emf._aws.CloudWatchMetrics[0]?.Dimensions).toEqual([['service']]);
  });
});
