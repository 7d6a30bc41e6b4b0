import { describe, expect, it } from 'vitest';
import { setRoleTimeouts } from '../../lambda/postgres/provision-roles.ts';
import { exampleEnvelope } from '../../tools/local/example-envelope.ts';
import { holdCaseLock } from '../../tools/local/hold-case-lock.ts';
import { queueIsEmpty } from '../../tools/local/local-queues.ts';
import { createTestDatabase } from '../support/database.ts';
import { localQueueFixture } from './local-queue-fixture.ts';
import { pollerProcesses, waitFor } from './poller-process-fixture.ts';

// The deployable poller (bin/poller.ts as a child process) wired from its environment: POLLER_ADAPTIVE_CONCURRENCY and
// POLLER_CONCURRENCY_FLOOR reach the receive loop, and a change of the limit is one log line and one EMF metric.
// The worker role's lock_timeout is lowered to 200 ms in this file's database, so a held case row fails its records
// LOCK_TIMEOUT quickly.
const db = await createTestDatabase({ roles: true });
await setRoleTimeouts(db.sql, db.roles.worker, db.name, { statementTimeoutMs: 15_000, lockTimeoutMs: 200 });
const fixture = await localQueueFixture();
const startPollerProcess = pollerProcesses({
  databaseUrl: db.roleUrl('worker'),
  sqsEndpoint: fixture.endpoint,
  // EMF on stdout: the ConcurrencyLimit metric is read from it.
  environment: { POWERTOOLS_METRICS_DISABLED: 'false', POWERTOOLS_METRICS_NAMESPACE: 'SqsInboxWorkerTest' },
});

const stageChange = (caseId: string, version: number) =>
  JSON.stringify(
    exampleEnvelope({
      messageType: 'CaseStageChanged',
      idempotencyKey: `proc-hot:${version}`,
      aggregateType: 'Case',
      aggregateId: caseId,
      payload: { caseId, stage: `STAGE-${version}`, version },
    }),
  );

describe('Poller process (bin/poller.ts): adaptive concurrency from the environment', () => {
  it('cuts to POLLER_CONCURRENCY_FLOOR and no lower on lock timeouts, logging concurrency_limit_changed (warn) and publishing ConcurrencyLimit; completes every message once after the release', async () => {
    // Prepare: a hot case row held by the test; 30 changes of it waiting.
    const caseId = `PROC-HOT-${Date.now()}`;
    await db.sql`insert into cases (case_id, stage, version) values (${caseId}, 'NEW', 1)`;
    const { queueUrl } = await fixture.queues({ maxReceiveCount: 100, visibilityTimeoutSeconds: 30 });
    const release = await holdCaseLock(db.client({ max: 1 }), caseId);
    const hot = Array.from({ length: 30 }, (_, i) => stageChange(caseId, i + 2));
    await fixture.send(queueUrl, hot);

    // Act: 8 in flight at most, never fewer than 2.
    const poller = startPollerProcess(queueUrl, {
      POLLER_CONCURRENCY_FLOOR: '2',
      WORKER_MAX_BUSINESS_ATTEMPTS: '100',
      WORKER_BACKOFF_BASE_SECONDS: '1',
      WORKER_BACKOFF_MAX_SECONDS: '2',
    });
    const changes = () => poller.lines.filter((line) => line.message === 'concurrency_limit_changed');
    const lockTimeouts = () =>
      poller.lines.filter(
        (line) => line.message === 'worker_message_retryable_failure' && line.failureCode === 'LOCK_TIMEOUT',
      ).length;
    await waitFor('the floor', () => changes().some((line) => line.to === 2), 60_000, [poller]);
    // Twenty more lock timeouts at the floor (2 at a time, 200 ms each): several windows that could cut again.
    const atFloor = lockTimeouts();
    await waitFor('lock timeouts at the floor', () => lockTimeouts() >= atFloor + 20, 60_000, [poller]);
    const changesWhileLocked = changes();
    await release();
    await waitFor(
      'every message completed',
      async () => {
        const [row] = await db.sql<{ done: number }[]>`
          select count(*)::int as done from worker_inbox where idempotency_key like 'proc-hot:%' and status = 'COMPLETED'
        `;
        return row?.done === hot.length;
      },
      60_000,
      [poller],
    );
    await waitFor('the queue drained', () => queueIsEmpty(fixture.sqs, queueUrl), 30_000, [poller]);
    poller.child.kill('SIGTERM');
    const exit = await poller.exited;

    // Assess: the settings were logged at start; the cuts went 8 → … → 2 and stopped at the floor, each a warn line
    // with its reason and an EMF ConcurrencyLimit of the new limit.
    expect(exit.code, poller.stderr()).toBe(0);
    expect(poller.lines.find((line) => line.message === 'poller_started')).toMatchObject({
      concurrency: 8,
      adaptiveConcurrency: 'on',
      concurrencyFloor: 2,
      concurrencyWindowMs: 1000,
    });
    expect(changesWhileLocked.map((line) => [line.level, line.from, line.to])).toEqual([
      ['WARN', 8, 6],
      ['WARN', 6, 4],
      ['WARN', 4, 3],
      ['WARN', 3, 2],
    ]);
    for (const line of changesWhileLocked) expect(String(line.reason)).toMatch(/contention [1-9]/);
    const published = poller.lines
      .filter((line) => typeof line._aws === 'object' && 'ConcurrencyLimit' in line)
      .map((line) => line.ConcurrencyLimit);
    expect(published.slice(0, 4)).toEqual([6, 4, 3, 2]);
    expect(changes().every((line) => Number(line.to) >= 2 && Number(line.to) <= 8)).toBe(true);
    const [row] = await db.sql<{ inbox: number; version: number }[]>`
      select (select count(*)::int from worker_inbox where idempotency_key like 'proc-hot:%') as inbox,
             (select version from cases where case_id = ${caseId}) as version
    `;
    expect(row).toEqual({ inbox: hot.length, version: hot.length + 1 });
  });

  it('keeps the limit at POLLER_CONCURRENCY with POLLER_ADAPTIVE_CONCURRENCY=off, and refuses a bad value at start (exit 2, naming it)', async () => {
    // Prepare
    const { queueUrl } = await fixture.queues({ visibilityTimeoutSeconds: 30 });

    // Act
    const refused = startPollerProcess(queueUrl, {
      POLLER_ADAPTIVE_CONCURRENCY: 'maybe',
      POLLER_CONCURRENCY_FLOOR: '9',
    });
    const refusedExit = await refused.exited;
    const off = startPollerProcess(queueUrl, { POLLER_ADAPTIVE_CONCURRENCY: 'off' });
    await waitFor('poller_started', () => off.count('poller_started') === 1, 30_000, [off]);
    off.child.kill('SIGTERM');
    const offExit = await off.exited;

    // Assess
    expect(refusedExit.code).toBe(2);
    expect(refused.stderr()).toContain('POLLER_ADAPTIVE_CONCURRENCY must be on or off (given "maybe")');
    expect(refused.stderr()).toContain(
      'POLLER_CONCURRENCY_FLOOR must be a whole number from 1 to 8 (given "9")',
    );
    expect(offExit.code, off.stderr()).toBe(0);
    expect(off.lines.find((line) => line.message === 'poller_started')).toMatchObject({
      concurrency: 8,
      adaptiveConcurrency: 'off',
    });
    expect(off.lines.find((line) => line.message === 'poller_started')).not.toHaveProperty(
      'concurrencyFloor',
    );
  });
});
