import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  enqueueOutbox,
  InvalidOutboxEnvelopeError,
  OutboxConflictError,
  OutboxUsageError,
  offloadPayload,
} from '../../lambda/outbox/index.ts';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import { MAX_PAYLOAD_DEPTH } from '../../lambda/worker/json-depth.ts';
import { requestHash } from '../../lambda/worker/request-hash.ts';
import { createTestDatabase } from '../support/database.ts';
import { nestedArrays } from '../support/nested-json.ts';

const db = await createTestDatabase();

const deadlineRequested = (caseId: string, overrides: Partial<Envelope> = {}): Envelope => ({
  messageId: `msg_${randomUUID()}`,
  schemaVersion: 1,
  messageType: 'CaseDeadlineCalculationRequested',
  producer: 'case-service',
  occurredAt: '2026-07-06T10:15:30Z',
  idempotencyKey: `case:${caseId}:deadline:INVESTIGATION`,
  aggregateType: 'case',
  aggregateId: caseId,
  payload: { caseId, stage: 'INVESTIGATION', effectiveAt: '2026-07-06T10:15:00Z' },
  ...overrides,
});

const outboxRows = (key: string) => db.sql`select * from outbox_events where idempotency_key = ${key}`;

describe('Function: enqueueOutbox()', () => {
  it('writes the envelope as a PENDING row in the producer transaction, with its request hash', async () => {
    // Prepare
    const caseId = `CASE-${randomUUID()}`;
    const envelope = deadlineRequested(caseId);

    // Act
    const result = await db.sql.begin(async (sql) => {
      await sql`insert into cases (case_id, stage, version) values (${caseId}, 'INVESTIGATION', 1)`;
      return enqueueOutbox(sql, envelope);
    });

    // Assess
    expect(result).toEqual({
      eventId: envelope.messageId,
      inserted: true,
      traceId: expect.stringMatching(/^1-[0-9a-f]{8}-[0-9a-f]{24}$/),
    });
    const [row] = await outboxRows(envelope.idempotencyKey);
    expect(row?.trace_header).toMatch(new RegExp(`^Root=${result.traceId};Parent=[0-9a-f]{16};Sampled=0$`));
    expect(row).toMatchObject({
      event_id: envelope.messageId,
      status: 'PENDING',
      message_type: 'CaseDeadlineCalculationRequested',
      schema_version: 1,
      aggregate_type: 'case',
      aggregate_id: caseId,
      attempts: 0,
      locked_until: null,
      request_hash: requestHash(envelope),
      envelope,
    });
  });

  it('leaves no outbox row when the producer transaction rolls back', async () => {
    // Prepare
    const caseId = `CASE-${randomUUID()}`;
    const envelope = deadlineRequested(caseId);

    // Act
    const attempt = db.sql.begin(async (sql) => {
      await sql`insert into cases (case_id, stage, version) values (${caseId}, 'INVESTIGATION', 1)`;
      await enqueueOutbox(sql, envelope);
      throw new Error('producer failed after enqueueing');
    });

    // Assess
    await expect(attempt).rejects.toThrow('producer failed after enqueueing');
    expect(await outboxRows(envelope.idempotencyKey)).toHaveLength(0);
    expect(await db.sql`select 1 from cases where case_id = ${caseId}`).toHaveLength(0);
  });

  it('is a no-op for a second enqueue of the same key and content, even with another messageId', async () => {
    // Prepare
    const envelope = deadlineRequested(`CASE-${randomUUID()}`);
    const first = await db.sql.begin((sql) => enqueueOutbox(sql, envelope));

    // Act
    const again = await db.sql.begin((sql) =>
      enqueueOutbox(sql, {
        ...envelope,
        messageId: `msg_${randomUUID()}`,
        occurredAt: '2026-07-07T00:00:00Z',
      }),
    );

    // Assess
    expect(again).toEqual({ eventId: envelope.messageId, inserted: false, traceId: first.traceId });
    expect(await outboxRows(envelope.idempotencyKey)).toHaveLength(1);
  });

  it('rejects the same key with a different payload and rolls the producer transaction back', async () => {
    // Prepare
    const caseId = `CASE-${randomUUID()}`;
    const envelope = deadlineRequested(caseId);
    await db.sql.begin((sql) => enqueueOutbox(sql, envelope));
    const changed = {
      ...envelope,
      messageId: `msg_${randomUUID()}`,
      payload: { ...envelope.payload, stage: 'REVIEW' },
    };

    // Act
    const attempt = db.sql.begin(async (sql) => {
      await sql`insert into cases (case_id, stage, version) values (${caseId}, 'REVIEW', 2)`;
      await enqueueOutbox(sql, changed);
    });

    // Assess
    await expect(attempt).rejects.toBeInstanceOf(OutboxConflictError);
    await expect(attempt).rejects.toThrow(
      `Idempotency key ${envelope.idempotencyKey} is already in the outbox`,
    );
    const rows = await outboxRows(envelope.idempotencyKey);
    expect(rows).toHaveLength(1);
    expect(rows[0]?.envelope.payload.stage).toBe('INVESTIGATION');
    expect(await db.sql`select 1 from cases where case_id = ${caseId}`).toHaveLength(0);
  });

  it('rejects a messageId that another event already uses', async () => {
    // Prepare
    const first = deadlineRequested(`CASE-${randomUUID()}`);
    await db.sql.begin((sql) => enqueueOutbox(sql, first));
    const second = deadlineRequested(`CASE-${randomUUID()}`, { messageId: first.messageId });

    // Act
    const attempt = db.sql.begin((sql) => enqueueOutbox(sql, second));

    // Assess
    await expect(attempt).rejects.toThrow(
      `Outbox messageId ${first.messageId} is already used by another event`,
    );
    expect(await outboxRows(second.idempotencyKey)).toHaveLength(0);
  });

  it('keeps one row when two transactions enqueue the same key at once', async () => {
    // Prepare
    const envelope = deadlineRequested(`CASE-${randomUUID()}`);

    // Act
    const results = await Promise.all(
      [1, 2].map((n) =>
        db.sql.begin((sql) => enqueueOutbox(sql, { ...envelope, messageId: `${envelope.messageId}-${n}` })),
      ),
    );

    // Assess
    expect(results.map((r) => r.inserted).sort()).toEqual([false, true]);
    expect(await outboxRows(envelope.idempotencyKey)).toHaveLength(1);
  });

  it('rejects an invalid envelope, naming the field, and writes nothing', async () => {
    // Prepare
    const envelope = deadlineRequested(`CASE-${randomUUID()}`, { occurredAt: 'yesterday' });

    // Act
    const attempt = db.sql.begin((sql) => enqueueOutbox(sql, envelope));

    // Assess
    await expect(attempt).rejects.toBeInstanceOf(InvalidOutboxEnvelopeError);
    await expect(attempt).rejects.toThrow(/occurredAt/);
    expect(await outboxRows(envelope.idempotencyKey)).toHaveLength(0);
  });

  it('rejects an envelope larger than an SQS message', async () => {
    // Prepare
    const envelope = deadlineRequested(`CASE-${randomUUID()}`, { payload: { blob: 'x'.repeat(1_048_576) } });

    // Act
    const attempt = db.sql.begin((sql) => enqueueOutbox(sql, envelope));

    // Assess
    await expect(attempt).rejects.toThrow(/above the queue's message limit of 1048576; pass `offload`/);
    expect(await outboxRows(envelope.idempotencyKey)).toHaveLength(0);
  });

  it(`accepts a payload nested ${MAX_PAYLOAD_DEPTH} levels (the bound), with the request hash the worker computes`, async () => {
    // Prepare: the payload object is level 1, its tree the other 63.
    const caseId = `CASE-${randomUUID()}`;
    const envelope = deadlineRequested(caseId, {
      payload: {
        caseId,
        stage: 'INVESTIGATION',
        effectiveAt: '2026-07-06T10:15:00Z',
        tree: nestedArrays(63),
      },
    });

    // Act
    await db.sql.begin((sql) => enqueueOutbox(sql, envelope));

    // Assess
    const [row] = await outboxRows(envelope.idempotencyKey);
    expect(row?.request_hash).toBe(requestHash(envelope));
    expect(row?.envelope.payload).toEqual(envelope.payload);
  });

  it.each([MAX_PAYLOAD_DEPTH + 1, 5_000])(
    'refuses a payload nested %i levels, naming the bound and the fix, and writes nothing',
    async (levels) => {
      // Prepare
      const caseId = `CASE-${randomUUID()}`;
      const envelope = deadlineRequested(caseId, {
        payload: {
          caseId,
          stage: 'INVESTIGATION',
          effectiveAt: '2026-07-06T10:15:00Z',
          tree: nestedArrays(levels - 1),
        },
      });

      // Act
      const attempt = db.sql.begin((sql) => enqueueOutbox(sql, envelope));

      // Assess
      await expect(attempt).rejects.toBeInstanceOf(InvalidOutboxEnvelopeError);
      await expect(attempt).rejects.toThrow(
        `Outbox envelope ${envelope.idempotencyKey}: its payload nests more than ${MAX_PAYLOAD_DEPTH} levels of objects and arrays, the bound the worker accepts (it would quarantine the message as PAYLOAD_TOO_DEEP); flatten the payload`,
      );
      expect(await outboxRows(envelope.idempotencyKey)).toHaveLength(0);
    },
  );

  it('refuses to offload a payload nested 5,000 levels before any upload (offloadPayload and enqueueOutbox with offload)', async () => {
    // Prepare: an S3 client that records every command it is sent.
    const sent: unknown[] = [];
    const s3 = { send: async (command: unknown) => sent.push(command) } as never;
    const caseId = `CASE-${randomUUID()}`;
    const envelope = deadlineRequested(caseId, {
      payload: {
        caseId,
        stage: 'INVESTIGATION',
        effectiveAt: '2026-07-06T10:15:00Z',
        tree: nestedArrays(5_000),
      },
    });

    // Act
    const direct = offloadPayload({ s3, bucket: 'case-payloads' }, envelope);
    const viaOutbox = db.sql.begin((sql) =>
      enqueueOutbox(sql, envelope, { offload: { s3, bucket: 'case-payloads', offloadAboveBytes: 1024 } }),
    );

    // Assess
    await expect(direct).rejects.toBeInstanceOf(InvalidOutboxEnvelopeError);
    await expect(direct).rejects.toThrow(`nests more than ${MAX_PAYLOAD_DEPTH} levels`);
    await expect(viaOutbox).rejects.toBeInstanceOf(InvalidOutboxEnvelopeError);
    expect(sent).toEqual([]);
    expect(await outboxRows(envelope.idempotencyKey)).toHaveLength(0);
  });

  it('refuses the pool instead of a transaction', async () => {
    // Prepare
    const envelope = deadlineRequested(`CASE-${randomUUID()}`);

    // Act
    // biome-ignore lint/suspicious/noExplicitAny: passing the wrong client on purpose
    const attempt = enqueueOutbox(db.sql as any, envelope);

    // Assess
    await expect(attempt).rejects.toBeInstanceOf(OutboxUsageError);
    expect(await outboxRows(envelope.idempotencyKey)).toHaveLength(0);
  });
});
