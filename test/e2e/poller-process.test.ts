import { describe, expect, it } from 'vitest';
import { exampleEnvelope } from '../../tools/local/example-envelope.ts';
import { holdCaseLock } from '../../tools/local/hold-case-lock.ts';
import { queueCounts, queueIsEmpty } from '../../tools/local/local-queues.ts';
import { createTestDatabase } from '../support/database.ts';
import { localQueueFixture } from './local-queue-fixture.ts';
import { pollerProcesses, waitFor } from './poller-process-fixture.ts';

// The components connect as their database roles (provisioned by the migration function's code); the test's own
// setup and assertions as the database's owner.
const db = await createTestDatabase({ roles: true });
const fixture = await localQueueFixture();
const startPollerProcess = pollerProcesses({
  databaseUrl: db.roleUrl('worker'),
  sqsEndpoint: fixture.endpoint,
});

const payment = (id: string) =>
  JSON.stringify(
    exampleEnvelope({
      messageType: 'PaymentCaptured',
      idempotencyKey: id,
      aggregateType: 'Payment',
      aggregateId: id,
      payload: { paymentId: id, accountId: `acct-${id.length % 7}`, amount: 10, currency: 'EUR' },
    }),
  );

const completedKeys = async (prefix: string) => {
  const [row] = await db.sql<{ count: number }[]>`
    select count(*)::int as count from worker_inbox where idempotency_key like ${`${prefix}%`} and status = 'COMPLETED'
  `;
  return row?.count ?? 0;
};

describe('Poller processes (bin/poller.ts, real signals)', () => {
  it('two pollers share 2,000 messages (30 % duplicates); one stopped by SIGTERM mid-run exits 0 within its stop timeout, the other finishes: one effect per key, nothing lost', async () => {
    // Prepare: 1,400 payments, 600 of them sent twice, interleaved.
    const { queueUrl, dlqUrl } = await fixture.queues({ maxReceiveCount: 5, visibilityTimeoutSeconds: 30 });
    const unique = Array.from({ length: 1400 }, (_, i) => payment(`term-${i}`));
    const bodies = [...unique];
    for (let i = 0; i < 600; i += 1) bodies.splice((i * 7) % bodies.length, 0, unique[i] as string);
    await fixture.send(queueUrl, bodies);
    const stopTimeoutSeconds = 10;
    const env = { POLLER_STOP_TIMEOUT_SECONDS: String(stopTimeoutSeconds), POLLER_VISIBILITY_SECONDS: '20' };

    // Act: both pollers run; the first gets SIGTERM once a fifth of the keys are applied.
    const first = startPollerProcess(queueUrl, env);
    const second = startPollerProcess(queueUrl, env);
    await waitFor('a fifth of the keys applied', async () => (await completedKeys('term-')) >= 280, 40_000, [
      first,
      second,
    ]);
    const signalledAt = Date.now();
    first.child.kill('SIGTERM');
    const firstExit = await first.exited;
    await waitFor('every key applied', async () => (await completedKeys('term-')) === 1400, 40_000, [second]);
    await waitFor('the queue drained', () => queueIsEmpty(fixture.sqs, queueUrl), 20_000);
    second.child.kill('SIGTERM');
    const secondExit = await second.exited;

    // Assess: the stopped poller exited 0 within its stop timeout, after settling what it had.
    expect(firstExit.code, first.stderr()).toBe(0);
    expect(firstExit.at - signalledAt).toBeLessThan(stopTimeoutSeconds * 1000);
    expect(first.count('poller_stopped')).toBe(1);
    expect(secondExit.code, second.stderr()).toBe(0);
    // Both did work; every key has exactly one effect; every delivery is accounted for.
    const completed = first.count('worker_message_completed') + second.count('worker_message_completed');
    const duplicates = first.count('worker_message_duplicate') + second.count('worker_message_duplicate');
    expect(first.count('worker_message_completed')).toBeGreaterThan(0);
    expect(second.count('worker_message_completed')).toBeGreaterThan(0);
    expect(completed).toBe(1400);
    expect(duplicates).toBeGreaterThanOrEqual(600);
    const [ledger] = await db.sql`
      select count(*)::int as entries, count(distinct source_event_id)::int as keys
      from ledger_entries where source_event_id like 'term-%'
    `;
    expect(ledger).toEqual({ entries: 1400, keys: 1400 });
    const [inbox] = await db.sql`
      select count(*)::int as rows, count(*) filter (where status = 'COMPLETED')::int as completed
      from worker_inbox where idempotency_key like 'term-%'
    `;
    expect(inbox).toEqual({ rows: 1400, completed: 1400 });
    expect(await queueCounts(fixture.sqs, dlqUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });

  it('after SIGKILL mid-batch and a restart, the redeliveries of committed records are duplicates and nothing is applied twice', async () => {
    // Prepare: one batch of three payments and a stage change whose case row another transaction holds, so the
    // batch is still running (its committed payments not deleted yet) when the poller is killed.
    const { queueUrl, dlqUrl } = await fixture.queues({ maxReceiveCount: 5, visibilityTimeoutSeconds: 30 });
    await db.sql`insert into cases (case_id, stage, version) values ('kill-case', 'INVESTIGATION', 1)`;
    const release = await holdCaseLock(db.client({ max: 1 }), 'kill-case');
    const stage = JSON.stringify(
      exampleEnvelope({
        messageType: 'CaseStageChanged',
        idempotencyKey: 'kill-case:stage:v2',
        aggregateType: 'Case',
        aggregateId: 'kill-case',
        payload: { caseId: 'kill-case', stage: 'REVIEW', version: 2 },
      }),
    );
    await fixture.send(queueUrl, [payment('kill-0'), payment('kill-1'), stage, payment('kill-2')]);
    const env = { POLLER_VISIBILITY_SECONDS: '6' };

    // Act: kill the poller once the payments are committed, while the batch still waits for the lock.
    const killed = startPollerProcess(queueUrl, env);
    await waitFor('the payments committed', async () => (await completedKeys('kill-')) === 3, 30_000, [
      killed,
    ]);
    killed.child.kill('SIGKILL');
    const killedExit = await killed.exited;
    const afterKill = await queueCounts(fixture.sqs, queueUrl);
    await release();
    const restarted = startPollerProcess(queueUrl, env);
    await waitFor('the stage change applied', async () => (await completedKeys('kill-case')) === 1, 30_000, [
      restarted,
    ]);
    await waitFor('the queue drained', () => queueIsEmpty(fixture.sqs, queueUrl), 20_000);
    restarted.child.kill('SIGTERM');
    const restartedExit = await restarted.exited;

    // Assess: killed with all four messages still in flight (nothing deleted), then redelivered: the three
    // committed payments are duplicates, the stage change is applied once.
    expect(killedExit.code).toBe('SIGKILL');
    expect(afterKill.inFlight).toBe(4);
    expect(restartedExit.code, restarted.stderr()).toBe(0);
    const duplicateKeys = restarted.lines
      .filter((line) => line.message === 'worker_message_duplicate')
      .map((line) => line.idempotencyKey)
      .sort();
    expect(duplicateKeys).toEqual(['kill-0', 'kill-1', 'kill-2']);
    expect(
      restarted.lines
        .filter((line) => line.message === 'worker_message_completed')
        .map((line) => line.idempotencyKey),
    ).toEqual(['kill-case:stage:v2']);
    const [ledger] = await db.sql`
      select count(*)::int as entries from ledger_entries where source_event_id like 'kill-%'
    `;
    expect(ledger?.entries).toBe(3);
    const [caseRow] = await db.sql`select version, stage from cases where case_id = 'kill-case'`;
    expect(caseRow).toEqual({ version: 2, stage: 'REVIEW' });
    expect(await queueCounts(fixture.sqs, dlqUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });
});
