import { createHash, randomUUID } from 'node:crypto';
import type { Message } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import { lambdaContext as localLambdaContext } from '../../tools/local/lambda-context.ts';

/** ARN of the standard test queue. */
export const QUEUE_ARN = 'arn:aws:sqs:us-east-1:000000000000:case-worker-queue';

/** A full, valid envelope (pattern document §4) with `overrides` merged in. */
export function envelopeFactory(overrides: Record<string, unknown> = {}): Envelope {
  const id = randomUUID();
  return {
    messageId: `msg_${id}`,
    schemaVersion: 1,
    messageType: 'PaymentCaptured',
    producer: 'payment-service',
    occurredAt: '2026-07-06T10:15:30Z',
    idempotencyKey: `payment:${id}`,
    aggregateType: 'payment',
    aggregateId: `PAY-${id}`,
    causationId: `cmd_${id}`,
    correlationId: `trace_${id}`,
    attemptPolicy: { maxBusinessAttempts: 5, notBefore: null },
    payload: { paymentId: `PAY-${id}`, accountId: 'ACC-1', amount: '10.50', currency: 'EUR' },
    ...overrides,
  } as Envelope;
}

/**
 * A `CaseStageChanged` envelope as the case service would enqueue it in its outbox: key
 * `case:<caseId>:stage:v<version>`, stage INVESTIGATION unless `payload` says otherwise.
 */
export function caseStageEnvelope(
  caseId: string,
  version = 1,
  payload: Record<string, unknown> = {},
): Envelope {
  return {
    messageId: `msg_${randomUUID()}`,
    schemaVersion: 1,
    messageType: 'CaseStageChanged',
    producer: 'case-service',
    occurredAt: new Date().toISOString(),
    idempotencyKey: `case:${caseId}:stage:v${version}`,
    aggregateType: 'case',
    aggregateId: caseId,
    payload: { caseId, stage: 'INVESTIGATION', version, ...payload },
  };
}

/** A full SQS record as Lambda delivers it; `body` may be an object (JSON-encoded) or a raw string. */
export function sqsRecordFactory(
  body: unknown,
  overrides: Partial<SQSRecord> & { receiveCount?: number } = {},
): SQSRecord {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const { receiveCount, ...rest } = overrides;
  const now = Date.now();
  return {
    messageId: randomUUID(),
    receiptHandle: `rh-${randomUUID()}`,
    body: text,
    attributes: {
      ApproximateReceiveCount: String(receiveCount ?? 1),
      SentTimestamp: String(now - 50),
      SenderId: 'AIDAEXAMPLE',
      ApproximateFirstReceiveTimestamp: String(now),
    },
    messageAttributes: {},
    md5OfBody: createHash('md5').update(text).digest('hex'),
    eventSource: 'aws:sqs',
    eventSourceARN: QUEUE_ARN,
    awsRegion: 'us-east-1',
    ...rest,
  };
}

/** An SQS event of the given records. */
export function sqsEvent(records: SQSRecord[]): SQSEvent {
  return { Records: records };
}

/**
 * The Lambda context of one test invocation, `remainingMs` before its timeout: the local runtime's own
 * (`tools/local/lambda-context.ts`), so tests and `npm start` build contexts one way.
 */
export function lambdaContext(remainingMs = 30_000): Context {
  return localLambdaContext({ functionName: 'case-worker', timeoutMs: remainingMs });
}

/** The Lambda shape of a message received from a queue of `arn` (the local event source mapping does the same, fully). */
export function receivedRecord(message: Message, arn: string): SQSRecord {
  return {
    messageId: message.MessageId as string,
    receiptHandle: message.ReceiptHandle as string,
    body: message.Body as string,
    attributes: message.Attributes as unknown as SQSRecord['attributes'],
    messageAttributes: {},
    md5OfBody: message.MD5OfBody as string,
    eventSource: 'aws:sqs',
    eventSourceARN: arn,
    awsRegion: 'us-east-1',
  };
}
