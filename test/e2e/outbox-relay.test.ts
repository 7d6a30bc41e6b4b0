import { randomUUID } from 'node:crypto';
import { Metrics } from '@aws-lambda-powertools/metrics';
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  type SendMessageBatchCommand,
  type SendMessageBatchCommandOutput,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { enqueueOutbox } from '../../lambda/outbox/index.ts';
import { type OutboxSqsSender, relayOutbox } from '../../lambda/outbox/relay-outbox.ts';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import { createTestDatabase } from '../support/database.ts';
import { caseStageEnvelope } from '../support/sqs-event.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

// The components connect as their database roles (provisioned by the migration function's code); the test's own
// setup and assertions as the database's owner.
const db = await createTestDatabase({ roles: true });
const local = await localQueueFixture();
/** The relay function's client (its role's key); `local.sqs`, the operator's, reads the queues. */
const relaySqs = local.as('relay').sqs;
/** The relay's database client (its role); `db.sql`, the owner's, enqueues as the producers and asserts. */
const relaySql = db.as('relay');

const SECRET = 'payload-secret-4711';

const event = (aggregateId: string, n: number, payload: Record<string, unknown> = {}): Envelope =>
  caseStageEnvelope(aggregateId, n, { stage: `STAGE_${n}`, note: SECRET, ...payload });

const enqueue = (envelopes: readonly Envelope[]) =>
  db.sql.begin(async (sql) => {
    for (const envelope of envelopes) await enqueueOutbox(sql, envelope);
  });

interface RecordedCall {
  readonly keys: string[];
  readonly bytes: number;
  readonly ok: boolean;
}

/** A real SQS client that records every SendMessageBatch and fails the calls `fail` selects. */
function recordingSender(
  real: SQSClient,
  fail: (call: number) => boolean = () => false,
): OutboxSqsSender & { calls: RecordedCall[]; sentKeys: string[] } {
  const calls: RecordedCall[] = [];
  const sentKeys: string[] = [];
  return {
    calls,
    sentKeys,
    async send(command: SendMessageBatchCommand): Promise<SendMessageBatchCommandOutput> {
      const entries = command.input.Entries ?? [];
      const keys = entries.map((e) => JSON.parse(e.MessageBody ?? '{}').idempotencyKey as string);
      const bytes = entries.reduce((sum, e) => sum + Buffer.byteLength(e.MessageBody ?? ''), 0);
      const n = calls.length;
      if (fail(n)) {
        calls.push({ keys, bytes, ok: false });
        throw Object.assign(new Error('injected: SQS is unavailable'), { name: 'ServiceUnavailable' });
      }
      const output = await real.send(command);
      calls.push({ keys, bytes, ok: true });
      const okIds = new Set((output.Successful ?? []).map((s) => s.Id));
      for (const [i, entry] of entries.entries()) if (okIds.has(entry.Id)) sentKeys.push(keys[i]);
      return output;
    },
  };
}

const run = (
  options: Partial<Parameters<typeof relayOutbox>[0]> & { sql?: postgres.Sql; queueUrl: string },
) => relayOutbox({ sql: relaySql, sqs: relaySqs, deadline: Date.now() + 30_000, ...options });

/** Receives every message of a standard queue once (made invisible for a minute). */
const receiveBodies = async (queueUrl: string) =>
  (await local.receiveAll(queueUrl)).map((m) => JSON.parse(m.body));

/** Receives a FIFO queue one message at a time, deleting each, so order within a group is observable. */
async function drainFifo(queueUrl: string, expected: number) {
  const received: { body: Envelope; groupId?: string; dedupId?: string }[] = [];
  for (let i = 0; i < expected * 3 && received.length < expected; i++) {
    const { Messages = [] } = await local.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        MessageSystemAttributeNames: ['All'],
      }),
    );
    for (const message of Messages) {
      received.push({
        body: JSON.parse(message.Body ?? '{}'),
        groupId: message.Attributes?.MessageGroupId,
        dedupId: message.Attributes?.MessageDeduplicationId,
      });
      await local.sqs.send(
        new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle }),
      );
    }
  }
  return received;
}

describe('Function: relayOutbox()', () => {
  // The outbox is one table for every queue: start each test without rows left by another.
  afterEach(() => db.sql`delete from outbox_events`);

  it('sends nothing for a producer transaction that rolled back', async () => {
    // Prepare
    const { queueUrl } = await local.queues();
    const envelope = event(`CASE-${randomUUID()}`, 1);
    await expect(
      db.sql.begin(async (sql) => {
        await enqueueOutbox(sql, envelope);
        throw new Error('producer rolled back');
      }),
    ).rejects.toThrow('producer rolled back');

    // Act
    const result = await run({ queueUrl });

    // Assess
    expect(result.published).toBe(0);
    expect(
      await db.sql`select 1 from outbox_events where idempotency_key = ${envelope.idempotencyKey}`,
    ).toHaveLength(0);
    expect(await local.receiveAll(queueUrl)).toHaveLength(0);
  });

  it('publishes committed rows, marks them PUBLISHED with the SQS message id and emits the metrics', async () => {
    // Prepare
    const { queueUrl } = await local.queues();
    const envelopes = [1, 2, 3].map((n) => event(`CASE-${randomUUID()}`, n));
    await enqueue(envelopes);
    const metrics = new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'outbox-relay' });

    // Act
    const result = await run({ queueUrl, metrics });

    // Assess
    expect(result).toMatchObject({ published: 3, failed: 0, stoppedBy: 'no-work' });
    const received = await local.receiveAll(queueUrl);
    expect(
      received.map((m) => JSON.parse(m.body)).sort((a, b) => a.messageId.localeCompare(b.messageId)),
    ).toEqual([...envelopes].sort((a, b) => a.messageId.localeCompare(b.messageId)));
    const rows = await db.sql`
      select status, sqs_message_id, published_at, locked_until, locked_by, attempts from outbox_events
      where idempotency_key in ${db.sql(envelopes.map((e) => e.idempotencyKey))}
    `;
    expect(
      rows.every((r) => r.status === 'PUBLISHED' && r.published_at && !r.locked_until && !r.locked_by),
    ).toBe(true);
    expect(rows.map((r) => r.sqs_message_id).sort()).toEqual(received.map((m) => m.messageId).sort());
    const emf = metrics.serializeMetrics() as unknown as Record<string, unknown>;
    expect(emf).toMatchObject({ OutboxPublished: 3, OutboxFailed: 0, OutboxOldestPendingAgeMs: 0 });
  });

  it('sends every one of 500 rows exactly once when two relays run at the same time', async () => {
    // Prepare
    const { queueUrl } = await local.queues();
    const envelopes = Array.from({ length: 500 }, (_, i) => event(`CASE-${randomUUID()}`, i + 1));
    for (let i = 0; i < envelopes.length; i += 100) await enqueue(envelopes.slice(i, i + 100));
    const senders = [recordingSender(relaySqs), recordingSender(relaySqs)];

    // Act
    const results = await Promise.all(
      senders.map((sqs, i) =>
        run({ queueUrl, sqs, sql: db.as('relay', { max: 1 }), batchSize: 20, relayId: `relay-${i}` }),
      ),
    );

    // Assess
    expect(results[0]?.published).toBeGreaterThan(0);
    expect(results[1]?.published).toBeGreaterThan(0);
    expect((results[0]?.published ?? 0) + (results[1]?.published ?? 0)).toBe(500);
    const sent = [...(senders[0]?.sentKeys ?? []), ...(senders[1]?.sentKeys ?? [])];
    expect(sent).toHaveLength(500);
    expect(new Set(sent).size).toBe(500);
    const bodies = await receiveBodies(queueUrl);
    expect(bodies).toHaveLength(500);
    expect(new Set(bodies.map((b) => b.idempotencyKey))).toEqual(
      new Set(envelopes.map((e) => e.idempotencyKey)),
    );
    const [pending] = await db.sql`
      select count(*)::int as n from outbox_events
      where status <> 'PUBLISHED' and idempotency_key in ${db.sql(envelopes.map((e) => e.idempotencyKey))}
    `;
    expect(pending?.n).toBe(0);
  });

  it('delivers three events of one aggregate in order on a FIFO queue when the first send fails once', async () => {
    // Prepare
    const { queueUrl } = await local.queues({ fifo: true });
    const aggregateId = `CASE-${randomUUID()}`;
    const envelopes = [1, 2, 3].map((n) => event(aggregateId, n));
    await enqueue(envelopes);
    const sqs = recordingSender(relaySqs, (call) => call === 0);
    let now = Date.now();
    const clock = () => new Date(now);

    // Act
    const first = await run({ queueUrl, sqs, clock, deadline: now + 30_000 });
    const blocked = await db.sql`select idempotency_key, attempts, last_error, next_attempt_at, locked_by
      from outbox_events where aggregate_id = ${aggregateId} order by sequence`;
    now += 5 * 60_000; // past the backoff
    const second = await run({ queueUrl, sqs, clock, deadline: now + 30_000 });

    // Assess
    expect(first).toMatchObject({ published: 0, failed: 1, stoppedBy: 'send-failure' });
    expect(blocked[0]).toMatchObject({ attempts: 1, locked_by: null });
    expect(blocked[0]?.last_error).toContain('ServiceUnavailable: injected: SQS is unavailable');
    expect(blocked[0]?.last_error).not.toContain(SECRET);
    expect(blocked[0]?.next_attempt_at.getTime()).toBeGreaterThan(Date.now());
    expect(blocked.slice(1).map((r) => r.attempts)).toEqual([0, 0]);
    expect(second).toMatchObject({ published: 3, failed: 0 });
    expect(sqs.calls.map((c) => c.keys)).toEqual(
      envelopes
        .map((e) => [e.idempotencyKey])
        .slice(0, 1)
        .concat(envelopes.map((e) => [e.idempotencyKey])),
    );
    const received = await drainFifo(queueUrl, 3);
    expect(received.map((m) => m.body.idempotencyKey)).toEqual(envelopes.map((e) => e.idempotencyKey));
    expect(received.every((m) => m.groupId === aggregateId)).toBe(true);
    expect(received.map((m) => m.dedupId)).toEqual(envelopes.map((e) => e.idempotencyKey));
  });

  it('replaces FIFO ids that SQS would reject (over 128 characters) with a stable digest', async () => {
    // Prepare
    const { queueUrl } = await local.queues({ fifo: true });
    const aggregateId = `CASE-${'x'.repeat(150)}`;
    const envelope = event(aggregateId, 1);
    await enqueue([envelope]);

    // Act
    const result = await run({ queueUrl });

    // Assess
    expect(result.published).toBe(1);
    const [received] = await drainFifo(queueUrl, 1);
    expect(received?.body.idempotencyKey).toBe(envelope.idempotencyKey);
    expect(received?.groupId).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(received?.dedupId).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('does not send a later event while an older one of its aggregate is leased by another relay', async () => {
    // Prepare
    const { queueUrl } = await local.queues();
    const slowAggregate = `CASE-${randomUUID()}`;
    const otherAggregate = `CASE-${randomUUID()}`;
    const [head, next] = [event(slowAggregate, 1), event(slowAggregate, 2)];
    const other = event(otherAggregate, 1);
    await enqueue([head as Envelope, next as Envelope, other]);
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered: () => void = () => {};
    const inFlight = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const slow: OutboxSqsSender = {
      async send(command) {
        entered();
        await gate;
        return relaySqs.send(command);
      },
    };

    // Act
    const relayA = run({
      queueUrl,
      sqs: slow,
      sql: db.as('relay', { max: 1 }),
      batchSize: 1,
      maxRounds: 1,
      relayId: 'relay-a',
    });
    await inFlight;
    const relayB = recordingSender(relaySqs);
    const duringLease = await run({
      queueUrl,
      sqs: relayB,
      sql: db.as('relay', { max: 1 }),
      relayId: 'relay-b',
    });
    release();
    await relayA;
    const afterPublish = await run({ queueUrl, sqs: relayB, relayId: 'relay-b' });

    // Assess
    expect(duringLease.published).toBe(1);
    expect(relayB.sentKeys).toEqual([other.idempotencyKey, next?.idempotencyKey]);
    expect(afterPublish.published).toBe(1);
  });

  it('splits a round into SendMessageBatch calls of at most 10 entries and 256 KiB', async () => {
    // Prepare
    const { queueUrl } = await local.queues();
    const envelopes = Array.from({ length: 14 }, (_, i) =>
      event(`CASE-${randomUUID()}`, i + 1, { blob: 'b'.repeat(60_000) }),
    );
    const small = Array.from({ length: 12 }, (_, i) => event(`CASE-${randomUUID()}`, i + 1));
    await enqueue([...envelopes, ...small]);
    const sqs = recordingSender(relaySqs);

    // Act
    const result = await run({ queueUrl, sqs, batchSize: 100 });

    // Assess
    expect(result.published).toBe(26);
    expect(sqs.calls.every((c) => c.ok && c.keys.length <= 10 && c.bytes <= 262_144)).toBe(true);
    expect(sqs.calls.length).toBeGreaterThanOrEqual(5); // 14 × ~60 KiB need ≥ 4 calls, the 12 small ones ≥ 1 more
    expect(sqs.calls.flatMap((c) => c.keys)).toHaveLength(26);
    expect(await local.receiveAll(queueUrl)).toHaveLength(26);
  });

  it('retries only the entries SQS rejected, keeping the error without the payload', async () => {
    // Prepare
    const { QueueUrl: queueUrl = '' } = await local.sqs.send(
      new CreateQueueCommand({
        QueueName: `small-${randomUUID()}`,
        Attributes: { MaximumMessageSize: '1024' },
      }),
    );
    local.bindQueue(queueUrl);
    const good = event(`CASE-${randomUUID()}`, 1);
    const bad = event(`CASE-${randomUUID()}`, 1, { blob: 'x'.repeat(2000) }); // above this queue's 1024 bytes
    await enqueue([good, bad]);

    // Act
    const result = await run({ queueUrl });

    // Assess
    expect(result).toMatchObject({ published: 1, failed: 1 });
    const [row] = await db.sql`select * from outbox_events where idempotency_key = ${bad.idempotencyKey}`;
    expect(row).toMatchObject({ status: 'PENDING', attempts: 1, locked_until: null, locked_by: null });
    expect(row?.last_error).toMatch(/^InvalidParameterValue: .*Message must be shorter than 1024 bytes/);
    expect(row?.last_error).not.toContain(SECRET);
    expect(result.oldestPendingAgeMs).toBeGreaterThanOrEqual(0);
    expect(await local.receiveAll(queueUrl)).toHaveLength(1);
  });

  it('starts no round after its deadline', async () => {
    // Prepare
    const { queueUrl } = await local.queues();
    const envelope = event(`CASE-${randomUUID()}`, 1);
    await enqueue([envelope]);

    // Act
    const result = await run({ queueUrl, deadline: Date.now() - 1 });

    // Assess
    expect(result).toMatchObject({ published: 0, rounds: 0, stoppedBy: 'deadline' });
    expect(result.oldestPendingAgeMs).toBeGreaterThanOrEqual(0);
    const [row] =
      await db.sql`select status from outbox_events where idempotency_key = ${envelope.idempotencyKey}`;
    expect(row?.status).toBe('PENDING');
  });
});
