import { createHash, randomUUID } from 'node:crypto';
import type { SQSRecord } from 'aws-lambda';
import { exampleEnvelope } from '../local/example-envelope.ts';

/** ARN the benchmark's records claim to come from (a standard queue: no FIFO ordering). */
export const BENCH_QUEUE_ARN = 'arn:aws:sqs:us-east-1:000000000000:bench-queue';

/**
 * `count` Lambda-shaped SQS records of `CaseDeadlineCalculationRequested` v1, one per case
 * `<prefix>-<n>` (n from 1), each with its own idempotency key: every message takes the full path (claim,
 * deadline upsert, COMPLETED) and no two contend for a row. Create the cases first ({@link caseIds}).
 */
export function deadlineRecords(prefix: string, count: number): SQSRecord[] {
  const sentAt = String(Date.now());
  return caseIds(prefix, count).map((caseId) => {
    const body = JSON.stringify(
      exampleEnvelope({
        messageType: 'CaseDeadlineCalculationRequested',
        producer: 'bench',
        idempotencyKey: `case:${caseId}:deadline:INVESTIGATION`,
        aggregateType: 'case',
        aggregateId: caseId,
        correlationId: `bench-${caseId}`,
        payload: { caseId, stage: 'INVESTIGATION', effectiveAt: '2026-07-06T10:15:00Z' },
      }),
    );
    return {
      messageId: randomUUID(),
      receiptHandle: `rh-${randomUUID()}`,
      body,
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: sentAt,
        SenderId: 'AIDABENCH',
        ApproximateFirstReceiveTimestamp: sentAt,
      },
      messageAttributes: {},
      md5OfBody: createHash('md5').update(body).digest('hex'),
      eventSource: 'aws:sqs',
      eventSourceARN: BENCH_QUEUE_ARN,
      awsRegion: 'us-east-1',
    };
  });
}

/** The case ids `<prefix>-1` … `<prefix>-<count>` that {@link deadlineRecords} refers to. */
export function caseIds(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, index) => `${prefix}-${index + 1}`);
}

/** Splits `items` into consecutive groups of `size` (the last one may be smaller). */
export function chunk<T>(items: readonly T[], size: number): T[][] {
  const groups: T[][] = [];
  for (let index = 0; index < items.length; index += size) groups.push(items.slice(index, index + size));
  return groups;
}
