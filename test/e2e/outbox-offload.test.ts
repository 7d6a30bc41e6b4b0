import { randomUUID } from 'node:crypto';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { enqueueOutbox, InvalidOutboxEnvelopeError } from '../../lambda/outbox/index.ts';
import { OUTBOX_MAX_MESSAGE_BYTES } from '../../lambda/outbox/prepare-outbox-envelope.ts';
import { relayOutbox } from '../../lambda/outbox/relay-outbox.ts';
import { TRACEPARENT_ATTRIBUTE_BYTES } from '../../lambda/tracing/trace-context.ts';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import { createTestDatabase } from '../support/database.ts';
import { envelopeFactory, lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';
import { exampleWorker } from '../support/test-worker.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

const db = await createTestDatabase();
const local = await localQueueFixture();
/** The producer's S3 client (a service outside the stack: the operator's key). */
const s3 = local.s3;
const BUCKET = await local.bucket('outbox-payloads');

/** A PaymentCaptured envelope padded (an extra payload field the schema ignores) to exactly `bytes` of JSON. */
function paymentOfSize(bytes: number): Envelope & { paymentId: string } {
  const paymentId = `PAY-${randomUUID()}`;
  const make = (note: string) =>
    envelopeFactory({
      idempotencyKey: `payment:${paymentId}:captured`,
      payload: { paymentId, accountId: 'ACC-BIG', amount: '1.00', currency: 'EUR', note },
    }) as unknown as Envelope;
  const base = Buffer.byteLength(JSON.stringify(make('')));
  const envelope = make('x'.repeat(bytes - base));
  expect(Buffer.byteLength(JSON.stringify(envelope))).toBe(bytes);
  return Object.assign(envelope, { paymentId });
}

/** The largest envelope a message can carry inline: the queue limit less the relay's traceparent attribute. */
const INLINE_LIMIT = OUTBOX_MAX_MESSAGE_BYTES - TRACEPARENT_ATTRIBUTE_BYTES;

const storedEnvelope = async (key: string) =>
  (await db.sql`select envelope from outbox_events where idempotency_key = ${key}`)[0]?.envelope as Envelope;

describe('Function: enqueueOutbox() with offload', () => {
  it('offloads a payload one byte over the queue limit to S3 and keeps one at the limit inline; the worker applies both', async () => {
    // Prepare
    const queues = await local.queues();
    const atLimit = paymentOfSize(INLINE_LIMIT);
    const over = paymentOfSize(INLINE_LIMIT + 1);
    const { paymentId: _a, ...atLimitEnvelope } = atLimit;
    const { paymentId: _b, ...overEnvelope } = over;

    // Act: enqueue, relay to fauxqs SQS, deliver what the queue holds to the worker.
    await db.sql.begin(async (sql) => {
      await enqueueOutbox(sql, atLimitEnvelope, { offload: { s3, bucket: BUCKET } });
      await enqueueOutbox(sql, overEnvelope, { offload: { s3, bucket: BUCKET } });
    });
    const relayed = await relayOutbox({
      sql: db.sql,
      sqs: local.as('relay').sqs,
      queueUrl: queues.queueUrl,
      deadline: Date.now() + 30_000,
    });
    const received = await local.receiveAll(queues.queueUrl);
    const worker = exampleWorker(db.sql, { s3: local.as('worker').s3 });
    const response = await worker(
      sqsEvent(received.map((message) => sqsRecordFactory(message.body))),
      lambdaContext(),
    );

    // Assess: the row over the limit carries a content-addressed reference to an object that holds the payload.
    const inline = await storedEnvelope(atLimit.idempotencyKey);
    const offloaded = await storedEnvelope(over.idempotencyKey);
    expect(inline.payload).toBeDefined();
    expect(inline.payloadRef).toBeUndefined();
    expect(offloaded.payload).toBeUndefined();
    expect(offloaded.payloadRef).toMatchObject({
      bucket: BUCKET,
      key: `payloads/sha256/${offloaded.payloadRef?.sha256}`,
    });
    const object = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: offloaded.payloadRef?.key }));
    const stored = JSON.parse(await (object.Body?.transformToString() ?? Promise.resolve('{}')));
    expect(stored.paymentId).toBe(over.paymentId);
    expect(relayed.published).toBe(2);
    expect(received.map((message) => Buffer.byteLength(message.body)).sort((a, b) => a - b)[1]).toBe(
      INLINE_LIMIT,
    );
    expect(response.batchItemFailures).toEqual([]);
    const ledger = await db.sql`
      select source_event_id from ledger_entries where source_event_id in (${atLimit.paymentId}, ${over.paymentId})`;
    expect(ledger).toHaveLength(2);
  });

  it('is a no-op when the same offloaded event is enqueued again (same object, same request hash)', async () => {
    // Prepare
    const { paymentId: _p, ...envelope } = paymentOfSize(OUTBOX_MAX_MESSAGE_BYTES + 10);
    const enqueue = () =>
      db.sql.begin((sql) =>
        enqueueOutbox(
          sql,
          { ...envelope, messageId: `msg_${randomUUID()}` },
          { offload: { s3, bucket: BUCKET } },
        ),
      );

    // Act
    const first = await enqueue();
    const second = await enqueue();

    // Assess
    expect(first.inserted).toBe(true);
    expect(second).toEqual({ eventId: first.eventId, inserted: false, traceId: first.traceId });
  });

  it('refuses an envelope over the limit without offload, naming the option to pass', async () => {
    // Prepare
    const { paymentId: _p, ...envelope } = paymentOfSize(OUTBOX_MAX_MESSAGE_BYTES + 1);

    // Act
    const attempt = db.sql.begin((sql) => enqueueOutbox(sql, envelope));

    // Assess
    await expect(attempt).rejects.toBeInstanceOf(InvalidOutboxEnvelopeError);
    await expect(attempt).rejects.toThrow(/above the queue's message limit of 1048576; pass `offload`/);
  });

  it('offloads above a lower threshold (a queue with a smaller MaximumMessageSize)', async () => {
    // Prepare
    const { paymentId: _p, ...envelope } = paymentOfSize(300_000);

    // Act
    await db.sql.begin((sql) =>
      enqueueOutbox(sql, envelope, { maxMessageBytes: 262_144, offload: { s3, bucket: BUCKET } }),
    );

    // Assess
    expect((await storedEnvelope(envelope.idempotencyKey)).payloadRef?.size).toBeGreaterThan(262_144);
  });
});
