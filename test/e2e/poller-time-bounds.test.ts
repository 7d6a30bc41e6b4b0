import { describe, expect, it, onTestFinished } from 'vitest';
import { createDatabaseProbe } from '../../lambda/breaker/create-database-probe.ts';
import { createSql } from '../../lambda/postgres/db.ts';
import { exampleEnvelope } from '../../tools/local/example-envelope.ts';
import { queueCounts, queueIsEmpty } from '../../tools/local/local-queues.ts';
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

const ledgerCount = async (ids: readonly string[]) =>
  (
    await db.sql<{ n: number }[]>`
      select count(*)::int as n from ledger_entries where source_event_id in ${db.sql(ids)}
    `
  )[0]?.n ?? 0;

describe('Poller time bounds (fauxqs over HTTP, real PostgreSQL)', () => {
  it('processes the next batches normally after a record used its whole budget', async () => {
    // Prepare: a 2 s lease extended 2 s at most: a record is held 4 s. One record sleeps 20 s in the database, on
    // its one attempt (maxBusinessAttempts 1: quarantined after it).
    const { queueUrl, dlqUrl } = await fixture.queues({ maxReceiveCount: 5, visibilityTimeoutSeconds: 2 });
    const { outcomes } = await startTestPoller({
      sqs: fixture.as('poller').sqs,
      queueUrl,
      sql: db.as('worker', { max: 1, prepare: false }),
      probe: async () => {},
      poller: { visibilitySeconds: 2, maxExtensionSeconds: 2 },
    });
    const slow = JSON.stringify(
      exampleEnvelope({
        messageType: 'SlowLedgerWrite',
        idempotencyKey: 'bounds-slow',
        aggregateType: 'Test',
        aggregateId: 'bounds-slow',
        attemptPolicy: { maxBusinessAttempts: 1 },
        payload: { paymentId: 'bounds-slow', sleepMs: 20_000 },
      }),
    );
    const ids = ['bounds-1', 'bounds-2', 'bounds-3'];

    // Act: the slow record, then good payments once it settled.
    await fixture.send(queueUrl, [slow]);
    await waitFor(
      'the slow record to time out',
      () => outcomes.countOf('bounds-slow', 'TERMINAL_FAILURE') === 1,
      20_000,
    );
    await fixture.send(
      queueUrl,
      ids.map((id) => paymentBody(id, 'acct-bounds')),
    );
    await waitFor('the payments applied', async () => (await ledgerCount(ids)) === 3, 30_000);

    // Assess: the slow record was cut by its budget; each payment was attempted at its first delivery, none deferred.
    const slowOutcome = outcomes.outcomes.find((outcome) => outcome.idempotencyKey === 'bounds-slow');
    expect(slowOutcome?.failureCode).toBe('HANDLER_TIMEOUT');
    expect(outcomes.counts().DEADLINE_DEFERRED ?? 0).toBe(0);
    for (const id of ids) expect(outcomes.countOf(`payment:${id}`, 'COMPLETED')).toBe(1);
    expect(await queueCounts(sqs, dlqUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });

  it('hands a record back within its batch budget when the database goes silent, then applies it once when it answers again', async () => {
    // Prepare: the engine's one connection, made as the deployed poller makes it, and the pause's probe, through a
    // proxy that can go silent (connections stay open, nothing is forwarded). A 10 s lease the heartbeat renews for
    // up to an hour: only the batch budget (3 s) bounds the record.
    const { proxy, url, connect } = await proxiedDatabase(db.roleUrl('worker'));
    const sql = createSql({ kind: 'url', url, poolSize: 1 }, { applicationName: 'poller-time-bounds' });
    const probe = createDatabaseProbe(() => connect(1), 1000);
    onTestFinished(async () => {
      await Promise.all([sql.end({ timeout: 0 }).catch(() => {}), probe.close()]);
      await proxy.close();
    });
    const batchTimeoutSeconds = 3;
    const backoffMaxSeconds = 2;
    const { queueUrl, dlqUrl } = await fixture.queues({ maxReceiveCount: 5, visibilityTimeoutSeconds: 10 });
    const { poller, outcomes, deliveries } = await startTestPoller({
      sqs: fixture.as('poller').sqs,
      queueUrl,
      sql,
      probe,
      poller: {
        visibilitySeconds: 10,
        batchTimeoutSeconds,
        pause: { probeBackoffBaseMs: 500, probeBackoffMaxMs: 1000, halfOpenMs: 500, probeTimeoutMs: 1000 },
      },
      worker: { backoff: { baseSeconds: 1, maxSeconds: backoffMaxSeconds } },
    });
    await fixture.send(queueUrl, [paymentBody('silent-warm', 'acct-silent')]);
    await waitFor('the warm-up payment', async () => (await ledgerCount(['silent-warm'])) === 1, 15_000);

    // Act 1: the database goes silent; a payment arrives.
    proxy.stall();
    const before = deliveries.length;
    await fixture.send(queueUrl, [paymentBody('silent-caught', 'acct-silent')]);
    await waitFor('the payment received', () => deliveries.length > before, 15_000);
    const { at: receivedAt = 0, messageId = '' } = deliveries[before] ?? {};
    await waitFor(
      'the payment visible again',
      () => fixture.visibleSince(queueUrl, messageId) !== undefined,
      30_000,
      100,
    );
    const heldMs = (fixture.visibleSince(queueUrl, messageId) ?? 0) - receivedAt;
    console.log(
      `silent database: the record was visible again ${heldMs} ms after its receive (batch budget ${batchTimeoutSeconds} s)`,
    );

    // Act 2: the database answers again; then a new payment.
    proxy.up();
    await waitFor('the payment applied', async () => (await ledgerCount(['silent-caught'])) === 1, 30_000);
    await fixture.send(queueUrl, [paymentBody('silent-after', 'acct-silent')]);
    await waitFor(
      'the next payment applied',
      async () => (await ledgerCount(['silent-after'])) === 1,
      30_000,
    );
    await waitFor('the queue drained', () => queueIsEmpty(sqs, queueUrl), 15_000);

    // Assess: handed back within a generous bound of the budget (the budget, its backoff, the settling), as a
    // connection-class failure that paused the poller; every payment applied once, nothing in the DLQ.
    expect(heldMs).toBeLessThan(2 * (batchTimeoutSeconds + backoffMaxSeconds) * 1000 + 5000);
    const caught = outcomes.outcomes.filter((outcome) => outcome.idempotencyKey === 'payment:silent-caught');
    expect(caught[0]?.failureCode).toBe('DATABASE_TIMEOUT');
    expect(caught.at(-1)?.result).toBe('COMPLETED');
    expect(poller.probes).toBeGreaterThan(0);
    const [ledger] = await db.sql<{ entries: number; keys: number }[]>`
      select count(*)::int as entries, count(distinct source_event_id)::int as keys from ledger_entries
      where source_event_id in ('silent-warm', 'silent-caught', 'silent-after')
    `;
    expect(ledger).toEqual({ entries: 3, keys: 3 });
    expect(await queueCounts(sqs, dlqUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });
});
