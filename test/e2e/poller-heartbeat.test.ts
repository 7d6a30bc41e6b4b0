import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { exampleEnvelope } from '../../tools/local/example-envelope.ts';
import { createTestDatabase } from '../support/database.ts';
import { localQueueFixture } from './local-queue-fixture.ts';
import { startTestPoller } from './poller-fixture.ts';

// The components connect as their database roles (provisioned by the migration function's code); the test's own
// setup and assertions as the database's owner.
const db = await createTestDatabase({ roles: true });
const fixture = await localQueueFixture();
const { sqs } = fixture;

/** Polls `condition` every 50 ms; rejects after `timeoutMs`. */
async function waitFor(what: string, condition: () => boolean | Promise<boolean>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition()) return Date.now();
    await sleep(50);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

const envelope = (messageType: string, key: string, payload: Record<string, unknown>) =>
  JSON.stringify(
    exampleEnvelope({ messageType, idempotencyKey: key, aggregateType: 'Test', aggregateId: key, payload }),
  );

describe('Poller heartbeat (fauxqs over HTTP, real PostgreSQL)', () => {
  it('holds a record that runs 3 × its lease without a second delivery, stops extending it when it settles, and never extends a failed record over its backoff', async () => {
    // Prepare: a 2 s lease; one record sleeps 6 s in the database, one fails at once with a 60 s backoff.
    const { queueUrl } = await fixture.queues({ visibilityTimeoutSeconds: 2 });
    const { poller, events, deliveries } = await startTestPoller({
      sqs: fixture.as('poller').sqs,
      queueUrl,
      sql: db.as('worker', { max: 2, prepare: false }),
      probe: async () => {},
      poller: { visibilitySeconds: 2, batchSize: 10 },
      worker: { backoff: { baseSeconds: 60, maxSeconds: 60 }, random: () => 0.999 },
    });
    const slow = envelope('SlowLedgerWrite', 'hb-slow', { paymentId: 'hb-slow', sleepMs: 6000 });
    const failing = envelope('AlwaysRetryable', 'hb-failing', {});

    // Act: both in one batch.
    const { SendMessageBatchCommand } = await import('@aws-sdk/client-sqs');
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: [
          { Id: '0', MessageBody: slow },
          { Id: '1', MessageBody: failing },
        ],
      }),
    );
    await waitFor('both records received', () => deliveries.length >= 2, 10_000);
    await waitFor(
      'the slow record to settle',
      async () => (await db.sql`select 1 from ledger_entries where source_event_id = 'hb-slow'`).length === 1,
      20_000,
    );
    await poller.idle();
    const settledAt = Date.now();
    const heartbeatsAtSettle = poller.stats.heartbeats;
    await sleep(2500); // more than one lease: an extension still running would show

    // Assess: one delivery each, the slow one extended while it ran and never after, the failed one never.
    const received = events.flatMap((e) => (e.event.type === 'received' ? e.event.messageIds : []));
    expect(received.length).toBe(2);
    expect(new Set(received).size).toBe(2);
    expect(deliveries.length).toBe(2);
    const extended = events.flatMap((e) =>
      e.event.type === 'extended' ? e.event.messageIds.map((id) => ({ id, at: e.at })) : [],
    );
    const settles = events.flatMap((e) => (e.event.type === 'settled' ? [{ at: e.at, ...e.event }] : []));
    const failedEntry = settles.flatMap((e) => e.visibility)[0];
    expect(failedEntry?.visibilitySeconds).toBe(60);
    const slowMessageId = received.find((id) => id !== failedEntry?.messageId) as string;
    const slowDeletedAt = settles.find((e) => e.deleted.includes(slowMessageId))?.at ?? 0;
    expect(slowDeletedAt).toBeGreaterThan(0);
    // 6 s of work on a 2 s lease renewed every second: at least 4 extensions of the slow record, none after it
    // settled; the failed record settled at once and was never extended.
    expect(extended.filter((e) => e.id === slowMessageId).length).toBeGreaterThanOrEqual(4);
    expect(extended.filter((e) => e.at > slowDeletedAt)).toEqual([]);
    expect(extended.filter((e) => e.id === failedEntry?.messageId)).toEqual([]);
    expect(extended.every((e) => e.at <= settledAt)).toBe(true);
    expect(poller.stats.heartbeats).toBe(heartbeatsAtSettle);
    // The failed record is in flight with its backoff (60 s), not a renewed 2 s lease.
    const inflight = fixture.inspectQueue(queueUrl.split('/').at(-1) ?? '')?.messages.inflight ?? [];
    const failedInFlight = inflight.find((entry) => entry.message.messageId === failedEntry?.messageId);
    expect(failedInFlight).toBeDefined();
    expect((failedInFlight?.visibilityDeadline ?? 0) - Date.now()).toBeGreaterThan(45_000);
    const [ledger] =
      await db.sql`select count(*)::int as count from ledger_entries where source_event_id = 'hb-slow'`;
    expect(ledger?.count).toBe(1);
  });
});
