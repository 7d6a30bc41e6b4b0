import { describe, expect, it } from 'vitest';
import { exampleEnvelope } from '../../tools/local/example-envelope.ts';
import { holdCaseLock } from '../../tools/local/hold-case-lock.ts';
import { queueCounts, queueIsEmpty } from '../../tools/local/local-queues.ts';
import { createTestDatabase } from '../support/database.ts';
import { localQueueFixture } from './local-queue-fixture.ts';
import { type PollerChild, pollerProcesses, waitFor } from './poller-process-fixture.ts';

// The components connect as their database roles (provisioned by the migration function's code); the test's own
// setup and assertions as the database's owner.
const db = await createTestDatabase({ roles: true });
const fixture = await localQueueFixture();
const startPollerProcess = pollerProcesses({
  databaseUrl: db.roleUrl('worker'),
  sqsEndpoint: fixture.endpoint,
});

/**
 * The poller that is stopped waits for a held row without end: the role's `lock_timeout` (5 s, as deployed) would
 * otherwise fail the record retryably and let the stop drain. Connection parameters in the URL, for that poller
 * alone.
 */
const WAITS_FOR_LOCKS = `${db.roleUrl('worker')}?lock_timeout=120000&statement_timeout=120000`;

const payment = (id: string) =>
  JSON.stringify(
    exampleEnvelope({
      messageType: 'PaymentCaptured',
      idempotencyKey: id,
      aggregateType: 'Payment',
      aggregateId: id,
      payload: { paymentId: id, accountId: 'acct-stop', amount: 10, currency: 'EUR' },
    }),
  );

const stageChange = (caseId: string) =>
  JSON.stringify(
    exampleEnvelope({
      messageType: 'CaseStageChanged',
      idempotencyKey: `${caseId}:stage:v2`,
      aggregateType: 'Case',
      aggregateId: caseId,
      payload: { caseId, stage: 'REVIEW', version: 2 },
    }),
  );

const completedKeys = async (prefix: string) => {
  const [row] = await db.sql<{ count: number }[]>`
    select count(*)::int as count from worker_inbox where idempotency_key like ${`${prefix}%`} and status = 'COMPLETED'
  `;
  return row?.count ?? 0;
};

/** Backends of this database waiting for a lock: the record whose case row is held. */
const waitingForLock = async () => {
  const [row] = await db.sql<{ count: number }[]>`
    select count(*)::int as count from pg_stat_activity
    where datname = current_database() and wait_event_type = 'Lock'
  `;
  return row?.count ?? 0;
};

const drained = (queueUrl: string) => () => queueIsEmpty(fixture.sqs, queueUrl);

/** What a poller logged for `message`, one idempotency key per line, sorted. */
const keysOf = (poller: PollerChild, message: string) =>
  poller.lines
    .filter((line) => line.message === message)
    .map((line) => String(line.idempotencyKey))
    .sort();

/**
 * A batch of two payments and a stage change whose case row another transaction holds: the payments commit,
 * the stage change waits for the row. Returns the queues, the release of the lock and the running poller.
 */
async function startBlockedBatch(prefix: string, env: Record<string, string>) {
  const { queueUrl, dlqUrl } = await fixture.queues({ maxReceiveCount: 5 });
  const caseId = `${prefix}-case`;
  await db.sql`insert into cases (case_id, stage, version) values (${caseId}, 'INVESTIGATION', 1)`;
  const release = await holdCaseLock(db.client({ max: 1 }), caseId);
  await fixture.send(queueUrl, [payment(`${prefix}-pay-0`), stageChange(caseId), payment(`${prefix}-pay-1`)]);
  const poller = startPollerProcess(queueUrl, { DATABASE_URL: WAITS_FOR_LOCKS, ...env });
  await waitFor(
    'the payments committed and the stage change waiting for its row',
    async () => (await completedKeys(`${prefix}-pay-`)) === 2 && (await waitingForLock()) === 1,
    30_000,
    [poller],
  );
  return { queueUrl, dlqUrl, caseId, stageKey: `${caseId}:stage:v2`, release, poller };
}

/**
 * After a stop that gave up: releases the lock, runs a fresh poller until the queue is empty and stops it. The
 * message of the record in flight comes back when its lease ends.
 */
async function redeliver(queueUrl: string, stageKey: string, release: () => Promise<void>) {
  await release();
  const fresh = startPollerProcess(queueUrl, { POLLER_VISIBILITY_SECONDS: '8' });
  await waitFor('the stage change applied', async () => (await completedKeys(stageKey)) === 1, 40_000, [
    fresh,
  ]);
  await waitFor('the queue drained', drained(queueUrl), 30_000, [fresh]);
  fresh.child.kill('SIGTERM');
  const exit = await fresh.exited;
  expect(exit.code, fresh.stderr()).toBe(0);
  return fresh;
}

/** The state both abandoned stops must leave once the fresh poller ran: every key applied once, nothing lost. */
async function expectAppliedOnce(options: {
  prefix: string;
  caseId: string;
  stageKey: string;
  dlqUrl: string;
  stopped: PollerChild;
  fresh: PollerChild;
  /** Messages still in flight (not deleted) when the stopped poller exited. */
  inFlightAtExit: number;
}) {
  const { prefix, stopped, fresh } = options;
  // The stopped poller committed the payments (before the signal) and not the stage change; the fresh one
  // completed the stage change, and the payments it received again (their delete was abandoned) are duplicates.
  expect(keysOf(stopped, 'worker_message_completed')).not.toContain(options.stageKey);
  expect(keysOf(fresh, 'worker_message_completed')).toEqual([options.stageKey]);
  // Both payments were still in flight at the exit, unless a lease renewal had deleted them (together) first.
  expect([1, 3]).toContain(options.inFlightAtExit);
  expect(keysOf(fresh, 'worker_message_duplicate')).toEqual(
    options.inFlightAtExit === 3 ? [`${prefix}-pay-0`, `${prefix}-pay-1`] : [],
  );
  expect(fresh.count('worker_message_retryable_failure')).toBe(0);
  const [ledger] = await db.sql`
    select count(*)::int as entries, count(distinct source_event_id)::int as keys
    from ledger_entries where source_event_id like ${`${prefix}-pay-%`}
  `;
  expect(ledger).toEqual({ entries: 2, keys: 2 });
  const [caseRow] = await db.sql`select stage, version from cases where case_id = ${options.caseId}`;
  expect(caseRow).toEqual({ stage: 'REVIEW', version: 2 });
  const inbox = await db.sql`
    select idempotency_key, status from worker_inbox where idempotency_key like ${`${prefix}-%`}
    order by idempotency_key
  `;
  expect(inbox).toEqual([
    { idempotency_key: options.stageKey, status: 'COMPLETED' },
    { idempotency_key: `${prefix}-pay-0`, status: 'COMPLETED' },
    { idempotency_key: `${prefix}-pay-1`, status: 'COMPLETED' },
  ]);
  expect(await queueCounts(fixture.sqs, options.dlqUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
}

/**
 * Nothing of the stopped poller's transaction committed: the stage change is not completed, the case unchanged
 * (the server rolls the transaction back once its lock wait ends: its connection is gone).
 */
async function expectNotCommitted(caseId: string, stageKey: string) {
  const completed = await db.sql`
    select 1 from worker_inbox where idempotency_key = ${stageKey} and status = 'COMPLETED'
  `;
  expect(completed).toHaveLength(0);
  const [caseRow] = await db.sql`select stage, version from cases where case_id = ${caseId}`;
  expect(caseRow).toEqual({ stage: 'INVESTIGATION', version: 1 });
}

describe('Poller stop (bin/poller.ts, real signals)', () => {
  it('exits 1 when a record in flight outlasts POLLER_STOP_TIMEOUT_SECONDS; its transaction is rolled back and the message is applied once by the next poller', async () => {
    // Prepare: the smallest stop timeout the configuration accepts.
    const stopTimeoutMs = 1000;
    const { queueUrl, dlqUrl, caseId, stageKey, release, poller } = await startBlockedBatch('timeout', {
      POLLER_STOP_TIMEOUT_SECONDS: String(stopTimeoutMs / 1000),
      POLLER_VISIBILITY_SECONDS: '8',
    });

    // Act: SIGTERM while the stage change waits for its row.
    const signalledAt = Date.now();
    poller.child.kill('SIGTERM');
    const exit = await poller.exited;
    const atExit = await queueCounts(fixture.sqs, queueUrl);
    await expectNotCommitted(caseId, stageKey);
    const fresh = await redeliver(queueUrl, stageKey, release);

    // Assess: exit 1 once the stop timeout passed — not before it, and not only when the row was released.
    // The upper bound is liveness (the timeout plus room to close the connections on a loaded machine).
    expect(exit.code, poller.stderr()).toBe(1);
    expect(exit.at - signalledAt).toBeGreaterThanOrEqual(stopTimeoutMs);
    expect(exit.at - signalledAt).toBeLessThan(stopTimeoutMs + 9000);
    expect(poller.count('poller_stop_timed_out')).toBe(1);
    expect(poller.count('poller_stopped')).toBe(0);
    const exitNow = poller.lines.filter((line) => line.message === 'poller_exit_now');
    expect(exitNow).toMatchObject([
      { reason: `records still in flight after ${stopTimeoutMs} ms`, exitCode: 1 },
    ]);
    // Nothing was deleted that did not commit: the stage change was still in flight at the exit (with the
    // payments, unless a lease renewal had deleted them first).
    expect(atExit.visible).toBe(0);
    expect(atExit.inFlight).toBeGreaterThanOrEqual(1);
    await expectAppliedOnce({
      prefix: 'timeout',
      caseId,
      stageKey,
      dlqUrl,
      stopped: poller,
      fresh,
      inFlightAtExit: atExit.inFlight,
    });
  });

  it('exits 1 at a second signal, far below the stop timeout; its transaction is rolled back and the message is applied once by the next poller', async () => {
    // Prepare: a stop timeout the test never waits for.
    const stopTimeoutMs = 30_000;
    const { queueUrl, dlqUrl, caseId, stageKey, release, poller } = await startBlockedBatch('second', {
      POLLER_STOP_TIMEOUT_SECONDS: String(stopTimeoutMs / 1000),
      POLLER_VISIBILITY_SECONDS: '8',
    });

    // Act: SIGTERM, then SIGINT once the poller is stopping.
    poller.child.kill('SIGTERM');
    await waitFor('the stop begun', () => poller.count('poller_stopping') === 1, 10_000, [poller]);
    const signalledAt = Date.now();
    poller.child.kill('SIGINT');
    const exit = await poller.exited;
    const atExit = await queueCounts(fixture.sqs, queueUrl);
    await expectNotCommitted(caseId, stageKey);
    const fresh = await redeliver(queueUrl, stageKey, release);

    // Assess: exit 1 at the second signal (liveness bound, a third of the stop timeout), without a stop result.
    expect(exit.code, poller.stderr()).toBe(1);
    expect(exit.at - signalledAt).toBeLessThan(stopTimeoutMs / 3);
    expect(poller.lines.filter((line) => line.message === 'poller_signal')).toMatchObject([
      { signal: 'SIGTERM', stopTimeoutMs },
    ]);
    expect(poller.lines.filter((line) => line.message === 'poller_exit_now')).toMatchObject([
      { reason: 'second signal (SIGINT)', exitCode: 1 },
    ]);
    expect(poller.count('poller_stop_timed_out')).toBe(0);
    expect(poller.count('poller_stopped')).toBe(0);
    expect(atExit.visible).toBe(0);
    expect(atExit.inFlight).toBeGreaterThanOrEqual(1);
    await expectAppliedOnce({
      prefix: 'second',
      caseId,
      stageKey,
      dlqUrl,
      stopped: poller,
      fresh,
      inFlightAtExit: atExit.inFlight,
    });
  });

  it('hands back the records of a batch not started at SIGTERM (visibility 0): visible at once, applied once by the next poller', async () => {
    // Prepare: one record at a time, a deadline guard longer than the stop timeout (no record starts once
    // stopping), a 30 s lease and 20 s long polls (the default: one is pending at SIGTERM); a stage change whose
    // case row is held, then three payments, in one batch.
    const { queueUrl, dlqUrl } = await fixture.queues({ maxReceiveCount: 5 });
    const caseId = 'release-case';
    const stageKey = `${caseId}:stage:v2`;
    await db.sql`insert into cases (case_id, stage, version) values (${caseId}, 'INVESTIGATION', 1)`;
    const release = await holdCaseLock(db.client({ max: 1 }), caseId);
    const payments = ['release-pay-0', 'release-pay-1', 'release-pay-2'];
    await fixture.send(queueUrl, [stageChange(caseId), ...payments.map(payment)]);
    const leaseSeconds = 30;
    const poller = startPollerProcess(queueUrl, {
      DATABASE_URL: WAITS_FOR_LOCKS,
      WORKER_RECORD_CONCURRENCY: '1',
      WORKER_DEADLINE_GUARD_MS: '15000',
      POLLER_STOP_TIMEOUT_SECONDS: '10',
      POLLER_VISIBILITY_SECONDS: String(leaseSeconds),
      POLLER_WAIT_SECONDS: '20',
    });
    await waitFor(
      'the stage change waiting for its row',
      async () => (await waitingForLock()) === 1,
      30_000,
      [poller],
    );

    // Act: SIGTERM; once the poller is stopping, the row is released and the stage change commits.
    poller.child.kill('SIGTERM');
    await waitFor('the stop begun', () => poller.count('poller_stopping') === 1, 10_000, [poller]);
    await release();
    const exit = await poller.exited;
    const atExit = await queueCounts(fixture.sqs, queueUrl);
    const fresh = startPollerProcess(queueUrl, { POLLER_VISIBILITY_SECONDS: String(leaseSeconds) });
    await waitFor(
      'the payments applied (well before their 30 s lease)',
      async () => (await completedKeys('release-pay-')) === 3,
      20_000,
      [fresh],
    );
    await waitFor('the queue drained', drained(queueUrl), 20_000, [fresh]);
    fresh.child.kill('SIGTERM');
    const freshExit = await fresh.exited;

    // Assess: a clean stop; the payments were not started and were handed back with visibility 0, so they were
    // visible at once, not after their 30 s lease; the next poller applied each once.
    expect(exit.code, poller.stderr()).toBe(0);
    expect(poller.count('poller_stopped')).toBe(1);
    expect(keysOf(poller, 'worker_message_completed')).toEqual([stageKey]);
    const deferred = poller.lines
      .filter((line) => line.message === 'worker_message_deadline_deferred')
      .map((line) => String(line.messageId))
      .sort();
    expect(deferred).toHaveLength(3);
    // The long poll pending at SIGTERM was left to finish: it received the deferred payments once they were handed
    // back, and they were handed back again at once (aborted, it would still have taken them in SQS, for a lease).
    const releasedAgain = poller.lines
      .filter((line) => line.message === 'poller_released')
      .flatMap((line) => line.messageIds as string[])
      .sort();
    expect(releasedAgain).toEqual(deferred);
    expect(poller.lines.find((line) => line.message === 'poller_stopped')).toMatchObject({ released: 6 });
    expect(atExit).toEqual({ visible: 3, inFlight: 0, delayed: 0 });
    expect(freshExit.code, fresh.stderr()).toBe(0);
    expect(keysOf(fresh, 'worker_message_completed')).toEqual(payments);
    expect(fresh.count('worker_message_duplicate')).toBe(0);
    const [ledger] = await db.sql`
      select count(*)::int as entries, count(distinct source_event_id)::int as keys
      from ledger_entries where source_event_id like 'release-pay-%'
    `;
    expect(ledger).toEqual({ entries: 3, keys: 3 });
    const [caseRow] = await db.sql`select stage, version from cases where case_id = ${caseId}`;
    expect(caseRow).toEqual({ stage: 'REVIEW', version: 2 });
    expect(await queueCounts(fixture.sqs, dlqUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });
});
