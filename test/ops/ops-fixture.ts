import type { MessageAttributeValue, SQSClient } from '@aws-sdk/client-sqs';
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type postgres from 'postgres';
import { afterAll } from 'vitest';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import { requestHash } from '../../lambda/worker/request-hash.ts';
import { startLocalSqs } from '../../tools/local/local-sqs.ts';
import type { Clock } from '../../tools/ops/clock.ts';
import { envelopeFactory } from '../support/sqs-event.ts';

/** A source queue and its DLQ, linked by a RedrivePolicy. */
export interface TestQueues {
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly dlqUrl: string;
  readonly dlqArn: string;
}

let counter = 0;

/** Starts fauxqs for the calling test file (stopped after it) and returns a real SDK client. */
export async function startOpsSqs(): Promise<{ sqs: SQSClient; endpoint: string }> {
  const local = await startLocalSqs();
  afterAll(() => local.stop());
  return { sqs: local.client(), endpoint: local.endpoint };
}

/** `value`, or an error naming the field an SQS response came without. */
function returned<T>(value: T | undefined, field: string): T {
  if (value === undefined) throw new Error(`SQS returned no ${field}; is fauxqs running?`);
  return value;
}

async function arn(sqs: SQSClient, queueUrl: string): Promise<string> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
  );
  return returned(Attributes?.QueueArn, 'QueueArn');
}

/**
 * Creates a fresh source queue (4 days retention) and DLQ (14 days), the source's RedrivePolicy pointing at
 * the DLQ with `maxReceiveCount`.
 */
export async function createQueues(
  sqs: SQSClient,
  options: { maxReceiveCount?: number; fifo?: boolean; sourceRetention?: number; dlqRetention?: number } = {},
): Promise<TestQueues> {
  counter += 1;
  const suffix = options.fifo ? '.fifo' : '';
  const fifo: Record<string, string> = options.fifo ? { FifoQueue: 'true' } : {};
  const name = `ops-${process.pid}-${counter}`;
  const dlq = await sqs.send(
    new CreateQueueCommand({
      QueueName: `${name}-dlq${suffix}`,
      Attributes: { ...fifo, MessageRetentionPeriod: String(options.dlqRetention ?? 14 * 86_400) },
    }),
  );
  const dlqUrl = returned(dlq.QueueUrl, 'QueueUrl');
  const dlqArn = await arn(sqs, dlqUrl);
  const source = await sqs.send(
    new CreateQueueCommand({
      QueueName: `${name}${suffix}`,
      Attributes: {
        ...fifo,
        MessageRetentionPeriod: String(options.sourceRetention ?? 4 * 86_400),
        VisibilityTimeout: '30',
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: dlqArn,
          maxReceiveCount: options.maxReceiveCount ?? 3,
        }),
      },
    }),
  );
  const queueUrl = returned(source.QueueUrl, 'QueueUrl');
  return { queueUrl, queueArn: await arn(sqs, queueUrl), dlqUrl, dlqArn };
}

/** A PaymentCaptured envelope (the example domain) with a readable key. */
export function paymentEnvelope(index: number, overrides: Record<string, unknown> = {}): Envelope {
  const tag = `${process.pid}-${counter}-${index}`;
  return envelopeFactory({
    idempotencyKey: `payment:PAY-${tag}`,
    aggregateId: `PAY-${tag}`,
    payload: { paymentId: `PAY-${tag}`, accountId: 'ACC-1', amount: '10.50', currency: 'EUR' },
    ...overrides,
  });
}

/**
 * A deadline request of a case that does not exist: the example handler fails it with CASE_NOT_FOUND, terminal at
 * once (one business attempt), so the store quarantines it.
 */
export function deadlineFor(caseId: string): Envelope {
  return envelopeFactory({
    messageType: 'CaseDeadlineCalculationRequested',
    idempotencyKey: `case:${caseId}:deadline`,
    aggregateType: 'case',
    aggregateId: caseId,
    payload: { caseId, stage: 'REVIEW', effectiveAt: '2026-07-06T10:00:00Z' },
    attemptPolicy: { maxBusinessAttempts: 1, notBefore: null },
  });
}

/** Sends bodies (objects are JSON-encoded) to a queue; returns the SQS message ids. */
export async function sendAll(
  sqs: SQSClient,
  queueUrl: string,
  bodies: ReadonlyArray<unknown>,
  attributes?: Record<string, MessageAttributeValue>,
  fifo?: { groupId: string },
): Promise<string[]> {
  const ids: string[] = [];
  for (const [index, body] of bodies.entries()) {
    const response = await sqs.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: typeof body === 'string' ? body : JSON.stringify(body),
        MessageAttributes: attributes,
        ...(fifo
          ? { MessageGroupId: fifo.groupId, MessageDeduplicationId: `dedup-${index}-${Date.now()}` }
          : {}),
      }),
    );
    ids.push(returned(response.MessageId, 'MessageId'));
  }
  return ids;
}

/** Visible + in-flight messages of a queue. */
export async function depth(
  sqs: SQSClient,
  queueUrl: string,
): Promise<{ visible: number; inFlight: number }> {
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return {
    visible: Number(Attributes.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0),
  };
}

/** Inserts an inbox row for an envelope, as the worker would have left it. */
export async function seedInbox(
  sql: postgres.Sql,
  envelope: Envelope,
  row: {
    status: string;
    failureCode?: string | null;
    attempts?: number;
    firstSeenAt?: Date;
    completedAt?: Date | null;
    consumer?: string;
  },
): Promise<void> {
  const hash = requestHash({
    messageType: envelope.messageType,
    schemaVersion: envelope.schemaVersion,
    payload: envelope.payload,
  });
  const seen = row.firstSeenAt ?? new Date();
  await sql`
    insert into worker_inbox (
      consumer, idempotency_key, message_type, schema_version, aggregate_type, aggregate_id, status,
      request_hash, first_seen_at, last_seen_at, completed_at, failed_at, failure_code, failure_message, receive_count
    ) values (
      ${row.consumer ?? 'case-worker'}, ${envelope.idempotencyKey}, ${envelope.messageType},
      ${envelope.schemaVersion}, ${envelope.aggregateType}, ${envelope.aggregateId},
      ${row.status}, ${hash}, ${seen}, ${seen},
      ${row.completedAt ?? (row.status === 'COMPLETED' ? seen : null)},
      ${row.failureCode ? seen : null}, ${row.failureCode ?? null}, ${row.failureCode ? 'seeded failure' : null},
      ${row.attempts ?? 1}
    )
  `;
}

/** A clock whose sleeps return at once and advance its time (rate limiting without waiting). */
export function fastClock(start = new Date()): Clock & { slept: number[] } {
  let now = start.getTime();
  const slept: number[] = [];
  return {
    now: () => new Date(now),
    sleep: async (ms) => {
      slept.push(ms);
      now += ms;
    },
    slept,
  };
}
