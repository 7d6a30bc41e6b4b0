import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createDatabaseProbe } from '../../lambda/breaker/create-database-probe.ts';
import { queueCounts } from '../../tools/local/local-queues.ts';
import { createTestDatabase } from '../support/database.ts';
import { paymentBody } from '../support/payment-body.ts';
import { proxiedDatabase } from '../support/proxied-database.ts';
import { waitFor } from '../support/wait-for.ts';
import { localQueueFixture } from './local-queue-fixture.ts';
import { startTestPoller } from './poller-fixture.ts';

// The components connect as their database roles (provisioned by the migration function's code); the test's own
// setup and assertions as the database's owner.
const db = await createTestDatabase({ roles: true });
const fixture = await localQueueFixture();
const { sqs } = fixture;
/** The poller's client (its task role's key). */
const pollerSqs = fixture.as('poller').sqs;
/** Every ReceiveMessage the poller's client sends, with its time: counted at the SDK, below the poller. */
const receiveCalls: number[] = [];
pollerSqs.middlewareStack.add(
  (next, context) => (args) => {
    if (context.commandName === 'ReceiveMessageCommand') receiveCalls.push(Date.now());
    return next(args);
  },
  { step: 'initialize', name: 'countReceives' },
);

const payment = (id: string) => paymentBody(id, 'acct-pause');

describe('Poller database-health pause (database cut by a TCP proxy for 10 s)', () => {
  it('stops receiving (no receive beyond the probes while paused), spends at most one receive count per message, and resumes by itself with one effect per key', async () => {
    // Prepare: engine and probe reach the database through one proxy.
    const { proxy, connect } = await proxiedDatabase(db.roleUrl('worker'));
    const probeCalls: number[] = [];
    const probe = createDatabaseProbe(() => connect(1), 1000);
    const { queueUrl, dlqUrl } = await fixture.queues({ maxReceiveCount: 5, visibilityTimeoutSeconds: 5 });
    const { poller, events, deliveries } = await startTestPoller({
      sqs: pollerSqs,
      queueUrl,
      sql: connect(2),
      probe: () => {
        probeCalls.push(Date.now());
        return probe();
      },
      poller: {
        visibilitySeconds: 5,
        pause: { probeBackoffBaseMs: 500, probeBackoffMaxMs: 1000, halfOpenMs: 500, probeTimeoutMs: 1000 },
      },
    });

    // Act 1: healthy.
    await fixture.send(
      queueUrl,
      Array.from({ length: 10 }, (_, i) => payment(`before-${i}`)),
    );
    await waitFor(
      'the first payments',
      async () => {
        const [row] = await db.sql`select count(*)::int as count from ledger_entries`;
        return row?.count === 10;
      },
      15_000,
    );

    // Act 2: cut the database for 10 s while a backlog arrives.
    proxy.down();
    const cutAt = Date.now();
    await fixture.send(
      queueUrl,
      Array.from({ length: 30 }, (_, i) => payment(`during-${i}`)),
    );
    await waitFor('the pause', () => poller.status === 'open', 10_000);
    await sleep(Math.max(0, cutAt + 10_000 - Date.now()));
    proxy.up();
    const upAt = Date.now();
    await waitFor('receiving again', () => poller.status !== 'open', 10_000);
    await waitFor(
      'every payment applied',
      async () => {
        const [row] = await db.sql`select count(*)::int as count from ledger_entries`;
        return row?.count === 40;
      },
      30_000,
    );
    await waitFor(
      'the queue drained',
      async () => {
        const counts = await queueCounts(sqs, queueUrl);
        return counts.visible + counts.inFlight + counts.delayed === 0;
      },
      15_000,
    );
    // Half-open receives one record at a time until halfOpenMs of good probes close it; the queue may drain first.
    await waitFor('the pause closed', () => poller.status === 'closed', 10_000);

    // Assess: while paused (from the pause's own event times), ReceiveMessage calls at most the probes — none, in
    // fact: the pause aborts a pending long poll and the loop waits for the probes.
    const changes = events.flatMap((e) =>
      e.event.type === 'pause' ? [{ at: e.at, status: e.event.status }] : [],
    );
    const pausedAt = changes.find((c) => c.status === 'open')?.at ?? 0;
    const resumedAt = changes.find((c) => c.at >= pausedAt && c.status !== 'open')?.at ?? 0;
    expect(pausedAt).toBeGreaterThan(cutAt);
    expect(resumedAt).toBeGreaterThan(upAt);
    const receivesWhilePaused = receiveCalls.filter((at) => at > pausedAt && at < resumedAt).length;
    const probesWhilePaused = probeCalls.filter((at) => at > pausedAt && at <= resumedAt).length;
    expect(probesWhilePaused).toBeGreaterThan(0);
    expect(receivesWhilePaused).toBeLessThanOrEqual(probesWhilePaused);
    expect(receivesWhilePaused).toBe(0);
    // The pause was entered and left, logged as events.
    const statuses = events.flatMap((e) => (e.event.type === 'pause' ? [e.event.status] : []));
    expect(statuses[0]).toBe('open');
    expect(statuses.at(-1)).toBe('closed');
    // No message was delivered more than once during the outage.
    const during = new Map<string, number>();
    for (const d of deliveries.filter((d) => d.at >= cutAt && d.at <= upAt)) {
      during.set(d.messageId, (during.get(d.messageId) ?? 0) + 1);
    }
    expect([...during.values()].every((count) => count <= 1)).toBe(true);
    // Processing resumed by itself: one effect per key, nothing in the DLQ.
    const [ledger] =
      await db.sql`select count(*)::int as entries, count(distinct source_event_id)::int as keys from ledger_entries`;
    expect(ledger).toEqual({ entries: 40, keys: 40 });
    expect(await queueCounts(sqs, dlqUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
    await proxy.close();
  });
});
