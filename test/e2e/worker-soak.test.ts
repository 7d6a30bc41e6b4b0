import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { startEventSourceMapping } from '../../tools/local/event-source-mapping.ts';
import { holdCaseLock } from '../../tools/local/hold-case-lock.ts';
import { queueCounts } from '../../tools/local/local-queues.ts';
import { createTestDatabase } from '../support/database.ts';
import { SOAK_MAPPING, soakEnvelope, soakMessages } from '../support/soak-messages.ts';
import { localQueueFixture } from './local-queue-fixture.ts';
import { exampleWorker } from './worker-fixture.ts';

// The components connect as their database roles (provisioned by the migration function's code); the test's own
// setup and assertions as the database's owner.
const db = await createTestDatabase({ roles: true });
const fixture = await localQueueFixture();

const TOTAL = 2000;
const DUPLICATES = 600; // 30 %
const UNIQUE = TOTAL - DUPLICATES;
const POISON = 8;
const TERMINAL = 10;
const STUCK = 2;
const EFFECTFUL = UNIQUE - POISON - TERMINAL - STUCK;
const PAYMENTS = EFFECTFUL / 2;
const DEADLINES = EFFECTFUL - PAYMENTS;

describe('Soak: 2,000 messages, 30 % duplicates, 5 % crashes after commit, 2 pollers', () => {
  it('applies every idempotency key exactly once and accounts for every key', async () => {
    // Prepare: cases for the deadline requests. Each request increments cases.deadline_version, an effect
    // that is NOT idempotent by itself: a version of 2 would be a second effect.
    await db.sql`
      insert into cases (case_id, stage, version)
      select 'soak-case-' || g, 'INVESTIGATION', 1 from generate_series(1, ${DEADLINES}) g
    `;
    await db.sql`insert into cases (case_id, stage, version) values ('soak-stuck', 'INVESTIGATION', 1)`;
    const releaseStuck = await holdCaseLock(db.client({ max: 1 }), 'soak-stuck');
    const stuck = Array.from({ length: STUCK }, (_, i) =>
      soakEnvelope('CaseStageChanged', `soak-stuck-v${i + 2}`, 'soak-stuck', {
        caseId: 'soak-stuck',
        stage: 'REVIEW',
        version: i + 2,
      }),
    );
    // 5 % of first deliveries of effectful messages crash between the commit and the delete (hooks, by message id).
    const { bodies, hooks } = soakMessages(
      {
        payments: PAYMENTS,
        accounts: 13,
        deadlines: DEADLINES,
        poison: POISON,
        terminal: TERMINAL,
        duplicates: DUPLICATES,
      },
      stuck,
    );
    expect(bodies).toHaveLength(TOTAL);

    const { queueUrl, dlqUrl } = await fixture.queues({ visibilityTimeoutSeconds: 2, maxReceiveCount: 3 });
    const { handler, outcomes: recorder } = exampleWorker(db, fixture.as('worker').sqs, { pool: 4 });

    // Act
    const started = Date.now();
    await fixture.send(queueUrl, bodies);
    const esm = await startEventSourceMapping({
      sqs: fixture.as('worker').sqs,
      queueUrl,
      handler,
      ...SOAK_MAPPING,
      hooks,
    });
    // Releases the held case lock once the stuck messages reached the DLQ; bounded, and aborted below so it
    // never polls an emulator that was stopped after a failure.
    const watch = new AbortController();
    const stuckWatch = (async () => {
      const deadline = Date.now() + 50_000;
      while ((await queueCounts(fixture.sqs, dlqUrl)).visible < STUCK) {
        if (Date.now() > deadline)
          throw new Error(`The ${STUCK} stuck messages did not reach the DLQ in 50 s`);
        await sleep(100, undefined, { signal: watch.signal });
      }
      await releaseStuck();
    })();
    stuckWatch.catch(() => {}); // reported by the await below, not as an unhandled rejection meanwhile
    let stats: Awaited<ReturnType<typeof esm.stop>>;
    try {
      await esm.drain({ timeoutMs: 50_000 });
      await stuckWatch;
    } finally {
      watch.abort();
      await stuckWatch.catch(() => {});
      await releaseStuck(); // a no-op when the watch released it
      stats = await esm.stop();
    }
    const seconds = (Date.now() - started) / 1000;

    // Assess: exactly one effect per key
    const [ledger] = await db.sql`
      select count(*)::int as entries, count(distinct source_event_id)::int as payments
      from ledger_entries where source_event_id like 'soak-pay-%'
    `;
    const [deadlines] = await db.sql`
      select count(*)::int as cases,
             count(*) filter (where deadline_version = 1)::int as once,
             count(*) filter (where deadline_version > 1)::int as more_than_once
      from cases where case_id like 'soak-case-%'
    `;
    expect(ledger).toEqual({ entries: PAYMENTS, payments: PAYMENTS });
    expect(deadlines).toEqual({ cases: DEADLINES, once: DEADLINES, more_than_once: 0 });

    // …and effects + quarantine + DLQ account for every key
    const inbox = await db.sql<{ status: string; count: number }[]>`
      select status, count(*)::int as count from worker_inbox group by status order by status
    `;
    const completed = inbox.find((row) => row.status === 'COMPLETED')?.count ?? 0;
    const quarantined = await db.sql<{ reason_code: string; count: number }[]>`
      select reason_code, count(*)::int as count from worker_quarantine group by reason_code order by reason_code
    `;
    const quarantinedTotal = quarantined.reduce((sum, row) => sum + row.count, 0);
    const dead = await fixture.receiveAll(dlqUrl);
    const outcomes = recorder.counts();
    console.log(
      [
        `soak: ${TOTAL} messages (${UNIQUE} keys + ${DUPLICATES} duplicates) in ${seconds.toFixed(1)} s`,
        `  effects: ${completed} completed keys (ledger ${ledger?.entries}, deadlines applied once ${deadlines?.once})`,
        `  quarantine: ${quarantinedTotal} (${quarantined.map((row) => `${row.reason_code} ${row.count}`).join(', ')})`,
        `  DLQ: ${dead.length}`,
        `  accounted: ${completed} + ${quarantinedTotal} + ${dead.length} = ${completed + quarantinedTotal + dead.length} of ${UNIQUE}`,
        `  outcomes: ${JSON.stringify(outcomes)}`,
        `  crashes after commit: ${stats.deletesDropped}; invocations ${stats.invocations}; received ${stats.messagesReceived}; max concurrency ${stats.maxObservedConcurrency}`,
      ].join('\n'),
    );
    expect(completed).toBe(EFFECTFUL);
    expect(quarantined).toEqual([
      { reason_code: 'CASE_NOT_FOUND', count: TERMINAL },
      { reason_code: 'INVALID_JSON', count: POISON },
    ]);
    expect(dead.map((message) => message.body).sort()).toEqual([...stuck].sort());
    expect(completed + quarantinedTotal + dead.length).toBe(UNIQUE);
    expect(stats.deletesDropped).toBeGreaterThan(TOTAL * 0.03);
    expect(outcomes.DUPLICATE).toBeGreaterThanOrEqual(DUPLICATES + stats.deletesDropped);
    expect(stats.maxObservedConcurrency).toBeGreaterThan(1);
    expect(await queueCounts(fixture.sqs, queueUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });
});
