import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabaseProbe } from '../../lambda/breaker/create-database-probe.ts';
import { exampleEnvelope } from '../../tools/local/example-envelope.ts';
import { holdCaseLock } from '../../tools/local/hold-case-lock.ts';
import { queueCounts, queueIsEmpty } from '../../tools/local/local-queues.ts';
import { createTestDatabase } from '../support/database.ts';
import { paymentBody } from '../support/payment-body.ts';
import { proxiedDatabase } from '../support/proxied-database.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import { waitFor } from '../support/wait-for.ts';
import { localQueueFixture } from './local-queue-fixture.ts';
import { startTestPoller } from './poller-fixture.ts';
import { pollerProcesses, waitFor as waitForChildren } from './poller-process-fixture.ts';

// The components connect as their database roles (provisioned by the migration function's code); the test's own
// setup and assertions as the database's owner.
const db = await createTestDatabase({ roles: true });
const fixture = await localQueueFixture();
const startPollerProcess = pollerProcesses({
  databaseUrl: db.roleUrl('worker'),
  sqsEndpoint: fixture.endpoint,
});

/** Whatever escapes every caller in this process (Node would exit on it). */
const escaped: unknown[] = [];
const onEscaped = (error: unknown) => escaped.push(error);
beforeAll(() => {
  process.on('uncaughtException', onEscaped);
  process.on('unhandledRejection', onEscaped);
});
afterAll(() => {
  process.off('uncaughtException', onEscaped);
  process.off('unhandledRejection', onEscaped);
});

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

/** The session of a worker transaction waiting for the case lock the test holds, once there is one. */
const lockWaiter = async (): Promise<number | undefined> => {
  const [row] = await db.sql<{ pid: number }[]>`
    select pid from pg_stat_activity
    where datname = current_database() and wait_event_type = 'Lock' and query like '%cases%'
  `;
  return row?.pid;
};

/**
 * One case whose stage change the test keeps waiting on a row lock (inside the worker's transaction), ten payments
 * of the same batch around it. Returns what the assertions need.
 */
async function lockedScenario(prefix: string) {
  const caseId = `${prefix}-case`;
  await db.sql`insert into cases (case_id, stage, version) values (${caseId}, 'INVESTIGATION', 1)`;
  const release = await holdCaseLock(db.client({ max: 1 }), caseId);
  const payments = Array.from({ length: 10 }, (_, i) => `${prefix}-${i}`);
  const bodies = payments.map((id) => paymentBody(id, `acct-${prefix}`));
  bodies.splice(3, 0, stageChange(caseId));
  const applied = async () => {
    const [row] = await db.sql<{ entries: number; keys: number }[]>`
      select count(*)::int as entries, count(distinct source_event_id)::int as keys
      from ledger_entries where source_event_id in ${db.sql(payments)}
    `;
    return row ?? { entries: 0, keys: 0 };
  };
  const caseRow = async () => (await db.sql`select stage, version from cases where case_id = ${caseId}`)[0];
  return { caseId, release, bodies, payments, applied, caseRow };
}

describe.each(['per-message', 'per-batch'] as const)(
  'Poller, connection lost mid-transaction, commitMode %s',
  (commitMode) => {
    it('in this process (startPoller): survives pg_terminate_backend and a TCP proxy cut of a waiting transaction, retries it, one effect per key', async () => {
      // Prepare: engine and probe through one proxy the test can cut
      const { proxy, connect } = await proxiedDatabase(db.roleUrl('worker'));
      const probe = createDatabaseProbe(() => connect(1), 1000);
      const { queueUrl, dlqUrl } = await fixture.queues({ maxReceiveCount: 10, visibilityTimeoutSeconds: 5 });
      const { poller, outcomes } = await startTestPoller({
        sqs: fixture.as('poller').sqs,
        queueUrl,
        sql: connect(4),
        probe,
        // Per batch, a batch's records run one after another in its one transaction
        worker: { commitMode, ...(commitMode === 'per-batch' ? { recordConcurrency: 1 } : {}) },
        poller: {
          visibilitySeconds: 5,
          pause: { probeBackoffBaseMs: 200, probeBackoffMaxMs: 500, halfOpenMs: 300, probeTimeoutMs: 1000 },
        },
      });
      const scenario = await lockedScenario(`inproc-${commitMode}`);
      const escapedBefore = escaped.length;

      // Act 1: the stage change waits for the lock in its transaction; its session is ended by an admin
      await fixture.send(queueUrl, scenario.bodies);
      const firstPid = await waitForPid();
      await db.sql`select pg_terminate_backend(${firstPid})`;
      // Act 2: redelivered, it waits again; this time the proxy cuts every connection, then comes back
      const secondPid = await waitForPid(firstPid);
      proxy.down();
      await waitFor('the database pause', () => poller.status === 'open', 10_000);
      proxy.up();
      await waitFor('the database pause closed', () => poller.status !== 'open', 15_000);
      await waitFor(
        'the payments applied',
        async () => (await scenario.applied()).entries === scenario.payments.length,
        30_000,
      );
      await scenario.release();
      await waitFor(
        'the stage change applied',
        async () => (await scenario.caseRow())?.version === 2,
        30_000,
      );
      await waitFor('the queue drained', () => queueIsEmpty(fixture.sqs, queueUrl), 20_000);

      // Assess: nothing escaped the process; the poller kept running; the cut record was retried, then applied once
      expect(secondPid).not.toBe(firstPid);
      expect(escaped.slice(escapedBefore)).toEqual([]);
      expect(poller.status).not.toBe('stopped');
      // (by SQS message id: a per-batch outcome of a record whose transaction did not finish has no key)
      const stageKey = `${scenario.caseId}:stage:v2`;
      const completed = outcomes.outcomes.filter(
        (o) => o.idempotencyKey === stageKey && o.result === 'COMPLETED',
      );
      expect(completed).toHaveLength(1);
      const stageOutcomes = outcomes.outcomes.filter((o) => o.messageId === completed[0]?.messageId);
      expect(stageOutcomes.filter((o) => o.result === 'RETRYABLE_FAILURE').length).toBeGreaterThanOrEqual(2);
      expect(await scenario.applied()).toEqual({ entries: 10, keys: 10 });
      expect(await scenario.caseRow()).toEqual({ stage: 'REVIEW', version: 2 });
      expect(await queueCounts(fixture.sqs, dlqUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
      await proxy.close();
    });

    it('as a process (bin/poller.ts): survives pg_terminate_backend and a TCP proxy cut of a waiting transaction, keeps running and exits 0 on SIGTERM, one effect per key', async () => {
      // Prepare: the child reaches the database through a proxy the test can cut
      const target = new URL(db.url);
      const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
      const viaProxy = new URL(db.roleUrl('worker'));
      viaProxy.port = String(proxy.port);
      const { queueUrl, dlqUrl } = await fixture.queues({ maxReceiveCount: 10, visibilityTimeoutSeconds: 5 });
      const scenario = await lockedScenario(`child-${commitMode}`);
      const child = startPollerProcess(queueUrl, {
        DATABASE_URL: viaProxy.toString(),
        WORKER_COMMIT_MODE: commitMode,
        ...(commitMode === 'per-batch' ? { WORKER_RECORD_CONCURRENCY: '1' } : {}),
        POLLER_VISIBILITY_SECONDS: '5',
        WORKER_BACKOFF_BASE_SECONDS: '1',
        WORKER_BACKOFF_MAX_SECONDS: '2',
      });
      const running = [child];

      // Act 1: the stage change waits for the lock in its transaction; its session is ended by an admin
      await fixture.send(queueUrl, scenario.bodies);
      const firstPid = await waitForPid(undefined, running);
      await db.sql`select pg_terminate_backend(${firstPid})`;
      // Act 2: redelivered, it waits again; this time the proxy cuts every connection, then comes back
      const secondPid = await waitForPid(firstPid, running);
      proxy.down();
      await waitForChildren('the poller pausing', () => child.count('poller_paused') >= 1, 15_000, running);
      proxy.up();
      await waitForChildren(
        'the payments applied',
        async () => (await scenario.applied()).entries === scenario.payments.length,
        40_000,
        running,
      );
      await scenario.release();
      await waitForChildren(
        'the stage change applied',
        async () => (await scenario.caseRow())?.version === 2,
        40_000,
        running,
      );
      await waitForChildren('the queue drained', () => queueIsEmpty(fixture.sqs, queueUrl), 20_000, running);
      child.child.kill('SIGTERM');
      const exit = await child.exited;

      // Assess: the process lived through both cuts (waitFor fails at once if it exits) and stopped cleanly
      expect(secondPid).not.toBe(firstPid);
      expect(exit.code, child.stderr()).toBe(0);
      expect(child.stderr()).not.toContain('TypeError');
      // The cut record was reported retryable each time, then applied once; every payment once; nothing in the DLQ
      // (by SQS message id: a per-batch outcome of a record whose transaction did not finish has no key)
      const stageKey = `${scenario.caseId}:stage:v2`;
      const completed = child.lines.filter(
        (line) => line.message === 'worker_message_completed' && line.idempotencyKey === stageKey,
      );
      expect(completed).toHaveLength(1);
      const retried = child.lines.filter(
        (line) =>
          line.message === 'worker_message_retryable_failure' && line.messageId === completed[0]?.messageId,
      );
      expect(retried.length).toBeGreaterThanOrEqual(2);
      expect(await scenario.applied()).toEqual({ entries: 10, keys: 10 });
      expect(await scenario.caseRow()).toEqual({ stage: 'REVIEW', version: 2 });
      expect(await queueCounts(fixture.sqs, dlqUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
      await proxy.close();
    });
  },
);

/** Waits for a worker session waiting on the case lock, other than `previous`; fails at once if a child exits. */
async function waitForPid(
  previous?: number,
  running: Parameters<typeof waitForChildren>[3] = [],
): Promise<number> {
  let pid: number | undefined;
  await waitForChildren(
    'a worker transaction waiting for the case lock',
    async () => {
      pid = await lockWaiter();
      return pid !== undefined && pid !== previous;
    },
    30_000,
    running,
  );
  return pid as number;
}
