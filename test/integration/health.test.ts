import { randomUUID } from 'node:crypto';
import type postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { collectHealth, type HealthFigures } from '../../lambda/health/collect-health.ts';
import { HEALTH_METRICS } from '../../lambda/health/health-metrics.ts';
import { enqueueOutbox } from '../../lambda/outbox/enqueue-outbox.ts';
import { captureOutput, emfSum } from '../support/capture-output.ts';
import { createTestDatabase } from '../support/database.ts';
import {
  caseStageEnvelope,
  envelopeFactory,
  lambdaContext,
  sqsEvent,
  sqsRecordFactory,
} from '../support/sqs-event.ts';
import { slowLedgerWrite } from '../support/test-handlers.ts';
import { exampleWorker } from '../support/test-worker.ts';

const db = await createTestDatabase();
const CONSUMER = 'case-worker';
/** The worker's own connections, apart from the ones the test holds locks with. */
const workerSql = db.client({ max: 2 });
const worker = exampleWorker(workerSql, { handlers: [...exampleHandlers, slowLedgerWrite] });

/** Reads the health figures until `done` holds (at most `timeoutMs`), returning the last ones. */
async function healthUntil(
  done: (figures: HealthFigures) => boolean,
  options: { longTransactionMs?: number; timeoutMs?: number } = {},
): Promise<HealthFigures> {
  const deadline = Date.now() + (options.timeoutMs ?? 5000);
  for (;;) {
    const figures = await collectHealth(db.sql, {
      consumer: CONSUMER,
      longTransactionMs: options.longTransactionMs,
    });
    if (done(figures) || Date.now() > deadline) return figures;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A transaction on its own connection (to `database`) that holds `case_id`'s row lock until `release()`. */
async function holdCaseRow(caseId: string, database: Pick<typeof db, 'client'> = db) {
  const holder = database.client({ max: 1 });
  let release = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let locked = () => {};
  const isLocked = new Promise<void>((resolve) => {
    locked = resolve;
  });
  const done = holder.begin(async (tx) => {
    await tx`select 1 from cases where case_id = ${caseId} for update`;
    locked();
    await released;
  });
  await isLocked;
  return {
    release: async () => {
      release();
      await done;
    },
  };
}

/** The deadlock counter of the database, straight from the statistics (not the health delta). */
async function deadlockCounter(): Promise<number> {
  const [row] = await db.sql<{ deadlocks: string }[]>`
    select deadlocks::text as deadlocks from pg_stat_database where datname = current_database()
  `;
  return Number(row?.deadlocks ?? 0);
}

/**
 * Two transactions, each on its own connection, lock two cases in opposite order: PostgreSQL detects the cycle
 * (deadlock_timeout 100 ms on these sessions) and aborts one with 40P01. Resolves with the SQLSTATEs.
 */
async function provokeDeadlock(): Promise<string[]> {
  const a = `CASE-${randomUUID()}`;
  const b = `CASE-${randomUUID()}`;
  await db.sql`insert into cases (case_id, stage, version) values (${a}, 'NEW', 1), (${b}, 'NEW', 1)`;
  const options = { max: 1, connection: { deadlock_timeout: '100ms' } } as const;
  const one = db.client(options);
  const two = db.client(options);
  let bothLocked = () => {};
  let firstLocked = 0;
  const gate = new Promise<void>((resolve) => {
    bothLocked = resolve;
  });
  const crossing = (sql: postgres.Sql, first: string, second: string) =>
    sql
      .begin(async (tx) => {
        await tx`update cases set version = version + 1 where case_id = ${first}`;
        firstLocked += 1;
        if (firstLocked === 2) bothLocked();
        await gate;
        await tx`update cases set version = version + 1 where case_id = ${second}`;
      })
      .then(
        () => 'committed',
        (error: { code?: string }) => error.code ?? 'error',
      );
  const outcomes = await Promise.all([crossing(one, a, b), crossing(two, b, a)]);
  await Promise.all([one.end(), two.end()]);
  return outcomes;
}

/** The health Lambda entry, loaded against this file's database with metrics enabled. */
async function loadHealthHandler() {
  process.env.DATABASE_URL = db.url;
  process.env.WORKER_CONSUMER = CONSUMER;
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
  try {
    return (await import('../../lambda/handlers/health.ts')).handler;
  } finally {
    process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  }
}

describe('Lambda entry: health (EMF)', () => {
  it('publishes every figure and a heartbeat on its first run, deadlocks 0', async () => {
    // Prepare: a deadlock before the first run is history, not news.
    const before = await deadlockCounter();
    expect(await provokeDeadlock()).toContain('40P01');
    await expect.poll(deadlockCounter, { timeout: 5000 }).toBeGreaterThan(before);
    const handler = await loadHealthHandler();

    // Act
    const { result, lines, error } = await captureOutput(() => handler());

    // Assess
    expect(error).toBeUndefined();
    const emf = lines.filter((line) => '_aws' in line);
    expect(emf).toHaveLength(1);
    expect(emfSum(lines, HEALTH_METRICS.heartbeat)).toBe(1);
    expect(emfSum(lines, HEALTH_METRICS.deadlocks)).toBe(0);
    expect(emfSum(lines, HEALTH_METRICS.quarantineOpen)).toBe(0);
    expect(emfSum(lines, HEALTH_METRICS.outboxPending)).toBe(0);
    expect(emfSum(lines, HEALTH_METRICS.lockWaits)).toBe(0);
    for (const name of Object.values(HEALTH_METRICS)) expect(emf[0]).toHaveProperty(name);
    expect(result?.deadlocks).toBe(0);
  });
});

describe('Function: collectHealth()', () => {
  it('counts an open quarantine entry and the age of the oldest', async () => {
    // Prepare: a body that is not JSON is quarantined by the worker and acknowledged.
    const poison = sqsRecordFactory(`{"not json ${randomUUID()}`);
    const response = await worker(sqsEvent([poison]), lambdaContext());
    expect(response.batchItemFailures).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 20));

    // Act
    const figures = await collectHealth(db.sql, { consumer: CONSUMER });

    // Assess
    expect(figures.quarantine.open).toBe(1);
    expect(figures.quarantine.oldestOpenAgeMs).toBeGreaterThanOrEqual(10);
    expect((await collectHealth(db.sql, { consumer: 'another-worker' })).quarantine.open).toBe(0);
  });

  it('shows a message stuck in PROCESSING by the age of the transaction that holds it', async () => {
    // Prepare: the worker's handler sleeps 1.5 s inside the inbox transaction.
    const paymentId = `PAY-${randomUUID()}`;
    const slow = envelopeFactory({
      messageType: 'SlowLedgerWrite',
      idempotencyKey: `slow:${paymentId}`,
      payload: { paymentId, sleepMs: 1500 },
    });
    const running = worker(sqsEvent([sqsRecordFactory(slow)]), lambdaContext());

    // Act
    const during = await healthUntil((f) => (f.inbox.oldestInFlightAgeMs ?? 0) >= 700, {
      longTransactionMs: 500,
    });
    const response = await running;
    const after = await collectHealth(db.sql, { consumer: CONSUMER, longTransactionMs: 500 });

    // Assess
    expect(during.inbox.oldestInFlightAgeMs).toBeGreaterThanOrEqual(700);
    expect(during.longTransactions.count).toBe(1);
    expect(during.longTransactions.oldestAgeMs).toBeGreaterThanOrEqual(700);
    expect(response.batchItemFailures).toEqual([]);
    expect(after.inbox.oldestInFlightAgeMs).toBeNull();
    expect(after.longTransactions.count).toBe(0);
    const [row] =
      await db.sql`select status from worker_inbox where idempotency_key = ${`slow:${paymentId}`}`;
    expect(row?.status).toBe('COMPLETED');
  });

  it('counts the worker waiting for a row another connection holds', async () => {
    // Prepare: the case exists and another connection holds its row; the worker's update must wait.
    const caseId = `CASE-${randomUUID()}`;
    await db.sql`insert into cases (case_id, stage, version) values (${caseId}, 'NEW', 1)`;
    const holder = await holdCaseRow(caseId);
    const running = worker(sqsEvent([sqsRecordFactory(caseStageEnvelope(caseId, 2))]), lambdaContext());

    // Act
    const waiting = await healthUntil((f) => f.locks.waiting >= 1 && (f.locks.oldestWaitMs ?? 0) >= 200);
    await holder.release();
    const response = await running;
    const after = await collectHealth(db.sql, { consumer: CONSUMER });

    // Assess
    expect(waiting.locks.waiting).toBe(1);
    expect(waiting.locks.oldestWaitMs).toBeGreaterThanOrEqual(200);
    expect(response.batchItemFailures).toEqual([]);
    expect(after.locks).toEqual({ waiting: 0, oldestWaitMs: null });
    const [row] = await db.sql`select version from cases where case_id = ${caseId}`;
    expect(row?.version).toBe(2);
  });

  it("counts no lock wait of another database's sessions (a transaction-id wait names no database)", async () => {
    // Prepare: in another database of the same server, one session holds a row and a second waits for it. The
    // waiter's ungranted lock is on the holder's transaction id, which pg_locks shows without a database.
    const other = await createTestDatabase();
    const caseId = `CASE-${randomUUID()}`;
    await other.sql`insert into cases (case_id, stage, version) values (${caseId}, 'NEW', 1)`;
    const holder = await holdCaseRow(caseId, other);
    const waiter = other.client({ max: 1 });
    const waiting = waiter`select 1 from cases where case_id = ${caseId} for update`.execute();
    const otherName = new URL(other.url).pathname.slice(1);
    await expect
      .poll(
        async () =>
          (
            await db.sql<{ n: number }[]>`
              select count(*)::int as n from pg_locks
               where not granted and database is null
                 and pid in (select pid from pg_stat_activity where datname = ${otherName})
            `
          )[0]?.n,
        { timeout: 5000 },
      )
      .toBe(1);

    // Act
    const figures = await collectHealth(db.sql, { consumer: CONSUMER });
    await Promise.all([holder.release(), waiting]);

    // Assess
    expect(figures.locks).toEqual({ waiting: 0, oldestWaitMs: null });
  });

  it('reports a deadlock once: the delta since the previous check', async () => {
    // Prepare
    await collectHealth(db.sql, { consumer: CONSUMER });
    const before = await deadlockCounter();

    // Act
    const outcomes = await provokeDeadlock();
    await expect.poll(deadlockCounter, { timeout: 5000 }).toBeGreaterThan(before);
    const first = await collectHealth(db.sql, { consumer: CONSUMER });
    const second = await collectHealth(db.sql, { consumer: CONSUMER });

    // Assess
    expect(outcomes.sort()).toEqual(['40P01', 'committed']);
    expect(first.deadlocks).toBe(1);
    expect(second.deadlocks).toBe(0);
  });

  it('counts the outbox backlog and the age of the oldest pending row', async () => {
    // Prepare: a producer commits three events; no relay runs.
    await db.sql.begin(async (tx) => {
      for (const version of [1, 2, 3])
        await enqueueOutbox(tx, caseStageEnvelope(`CASE-${randomUUID()}`, version));
    });
    await new Promise((resolve) => setTimeout(resolve, 20));

    // Act
    const figures = await collectHealth(db.sql, { consumer: CONSUMER });

    // Assess
    expect(figures.outbox.pending).toBe(3);
    expect(figures.outbox.oldestPendingAgeMs).toBeGreaterThanOrEqual(10);
  });

  it('refuses a statement timeout out of range, naming the value', async () => {
    // Act
    const error = await collectHealth(db.sql, { consumer: CONSUMER, statementTimeoutMs: 5 }).catch(
      (caught: unknown) => caught,
    );

    // Assess
    expect((error as Error).message).toContain(
      'statementTimeoutMs must be a whole number from 100 to 60000 (given 5)',
    );
  });
});

describe('Lambda entry: health (EMF) with conditions present', () => {
  it('publishes the open quarantine entry, the outbox backlog, a lock wait and a new deadlock', async () => {
    // Prepare: the quarantine entry and the outbox rows of the tests above stay; a lock wait is held and a
    // deadlock happens after the previous check.
    const handler = await loadHealthHandler();
    await captureOutput(() => handler());
    const caseId = `CASE-${randomUUID()}`;
    await db.sql`insert into cases (case_id, stage, version) values (${caseId}, 'NEW', 1)`;
    const holder = await holdCaseRow(caseId);
    const waiter = db.client({ max: 1 });
    const waiting = waiter`update cases set version = 3 where case_id = ${caseId}`.execute();
    await healthUntil((f) => f.locks.waiting >= 1);
    const before = await deadlockCounter();
    await provokeDeadlock();
    await expect.poll(deadlockCounter, { timeout: 5000 }).toBeGreaterThan(before);

    // Act
    const { result, lines } = await captureOutput(() => handler());
    await holder.release();
    await waiting;

    // Assess
    expect(emfSum(lines, HEALTH_METRICS.heartbeat)).toBe(1);
    expect(emfSum(lines, HEALTH_METRICS.quarantineOpen)).toBe(1);
    expect(emfSum(lines, HEALTH_METRICS.quarantineOldestOpenAgeMs)).toBe(result?.quarantine.oldestOpenAgeMs);
    expect(emfSum(lines, HEALTH_METRICS.outboxPending)).toBe(3);
    expect(emfSum(lines, HEALTH_METRICS.outboxOldestPendingAgeMs)).toBeGreaterThan(0);
    expect(emfSum(lines, HEALTH_METRICS.lockWaits)).toBe(1);
    expect(emfSum(lines, HEALTH_METRICS.lockWaitOldestMs)).toBe(result?.locks.oldestWaitMs);
    expect(emfSum(lines, HEALTH_METRICS.deadlocks)).toBe(1);
    expect(emfSum(lines, HEALTH_METRICS.inboxProcessing)).toBe(0);
    // Figures only: the quarantined body is never in the output.
    expect(lines.some((line) => JSON.stringify(line).includes('not json'))).toBe(false);
  });
});
