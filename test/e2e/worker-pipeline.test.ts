import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { type EventSourceMapping, startEventSourceMapping } from '../../tools/local/event-source-mapping.ts';
import { exampleEnvelope } from '../../tools/local/example-envelope.ts';
import { holdCaseLock } from '../../tools/local/hold-case-lock.ts';
import { queueCounts } from '../../tools/local/local-queues.ts';
import { createTestDatabase } from '../support/database.ts';
import { localQueueFixture } from './local-queue-fixture.ts';
import { exampleWorker } from './worker-fixture.ts';

// The components connect as their database roles (provisioned by the migration function's code); the test's own
// setup and assertions as the database's owner.
const db = await createTestDatabase({ roles: true });
const fixture = await localQueueFixture();
const running: EventSourceMapping[] = [];

afterEach(async () => {
  await Promise.all(running.splice(0).map((esm) => esm.stop()));
});

const payment = (id: string, amount = 10) =>
  JSON.stringify(
    exampleEnvelope({
      messageType: 'PaymentCaptured',
      idempotencyKey: `payment:${id}`,
      aggregateType: 'Payment',
      aggregateId: id,
      payload: { paymentId: id, accountId: 'acct-1', amount, currency: 'EUR' },
    }),
  );

const stageChanged = (caseId: string, version: number) =>
  JSON.stringify(
    exampleEnvelope({
      messageType: 'CaseStageChanged',
      idempotencyKey: `${caseId}:stage:v${version}`,
      aggregateType: 'Case',
      aggregateId: caseId,
      payload: { caseId, stage: `STAGE_${version}`, version },
    }),
  );

describe('Local pipeline: event source mapping → worker → PostgreSQL', () => {
  it('turns the redelivery after a crash between commit and delete into a duplicate no-op: one effect', async () => {
    // Prepare
    const { queueUrl } = await fixture.queues({ visibilityTimeoutSeconds: 1 });
    const { handler, outcomes, deliveries } = exampleWorker(db, fixture.as('worker').sqs);
    await fixture.send(queueUrl, [payment('crash-1')]);

    // Act
    const esm = await startEventSourceMapping({
      sqs: fixture.as('worker').sqs,
      queueUrl,
      handler,
      hooks: { dropDeleteAfterSuccess: (record) => record.attributes.ApproximateReceiveCount === '1' },
    });
    running.push(esm);
    await esm.drain();

    // Assess
    expect(deliveries.map((delivery) => delivery.receiveCount)).toEqual([1, 2]);
    expect(outcomes.outcomes.map((outcome) => outcome.result)).toEqual(['COMPLETED', 'DUPLICATE']);
    expect(esm.stats.deletesDropped).toBe(1);
    const ledger = await db.sql`select entry_id from ledger_entries where source_event_id = 'crash-1'`;
    expect(ledger).toHaveLength(1);
    const [inbox] = await db.sql`
      select status, receive_count from worker_inbox where idempotency_key = 'payment:crash-1'
    `;
    expect(inbox).toMatchObject({ status: 'COMPLETED' });
    expect(await queueCounts(fixture.sqs, queueUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });

  it('redelivers a retryable failure after its backoff, and sends one that never recovers to the DLQ intact', async () => {
    // Prepare: two cases whose rows another transaction holds locked (the worker's lock wait is 200 ms)
    await db.sql`insert into cases (case_id, stage, version) values ('case-recovers', 'NEW', 1), ('case-stuck', 'NEW', 1)`;
    const lockSql = db.client({ max: 2 });
    const releaseRecovers = await holdCaseLock(lockSql, 'case-recovers');
    const releaseStuck = await holdCaseLock(lockSql, 'case-stuck');
    // The queue's own visibility timeout is 30 s: only the worker's backoff can bring a failure back sooner.
    const { queueUrl, dlqUrl } = await fixture.queues({ visibilityTimeoutSeconds: 30, maxReceiveCount: 3 });
    const { handler, outcomes, deliveries } = exampleWorker(db, fixture.as('worker').sqs, {
      random: () => 0.99,
    });
    const recovers = stageChanged('case-recovers', 2);
    const stuck = stageChanged('case-stuck', 2);
    await fixture.send(queueUrl, [recovers, stuck]);

    // Act
    const esm = await startEventSourceMapping({
      sqs: fixture.as('worker').sqs,
      queueUrl,
      handler,
      batchSize: 1,
      maxConcurrency: 2,
    });
    running.push(esm);
    while (!outcomes.outcomes.some((o) => o.idempotencyKey === 'case-recovers:stage:v2')) await sleep(20);
    await releaseRecovers();
    await esm.drain({ timeoutMs: 40_000 });
    await releaseStuck();

    // Assess: the retry came after the backoff the worker set (1 s), long before the queue's 30 s
    const firstFailure = outcomes.outcomes.find((o) => o.idempotencyKey === 'case-recovers:stage:v2');
    expect(firstFailure).toMatchObject({
      result: 'RETRYABLE_FAILURE',
      failureCode: 'LOCK_TIMEOUT',
      visibilitySeconds: 1,
    });
    const times = deliveries.filter((d) => d.body === recovers).map((d) => d.at);
    expect(times).toHaveLength(2);
    const gap = (times[1] as number) - (times[0] as number);
    expect(gap).toBeGreaterThanOrEqual(1000);
    expect(gap).toBeLessThan(10_000);
    const [recovered] = await db.sql`select version from cases where case_id = 'case-recovers'`;
    expect(recovered?.version).toBe(2);

    // …and the message that never recovered was received maxReceiveCount times, then moved by SQS
    expect(deliveries.filter((d) => d.body === stuck).map((d) => d.receiveCount)).toEqual([1, 2, 3]);
    const dead = await fixture.receiveAll(dlqUrl);
    expect(dead.map((message) => message.body)).toEqual([stuck]);
    const [inbox] = await db.sql`
      select status, receive_count, failure_code from worker_inbox where idempotency_key = 'case-stuck:stage:v2'
    `;
    expect(inbox).toMatchObject({
      status: 'FAILED_RETRYABLE',
      receive_count: 3,
      failure_code: 'LOCK_TIMEOUT',
    });
    const [unchanged] = await db.sql`select version from cases where case_id = 'case-stuck'`;
    expect(unchanged?.version).toBe(1);
  });

  it('quarantines poison messages and deletes them from the queue', async () => {
    // Prepare
    const { queueUrl, dlqUrl } = await fixture.queues({ visibilityTimeoutSeconds: 1 });
    const { handler, outcomes, deliveries } = exampleWorker(db, fixture.as('worker').sqs);
    const notJson = 'poison: {not json';
    const badPayload = JSON.stringify(
      exampleEnvelope({
        messageType: 'PaymentCaptured',
        idempotencyKey: 'payment:bad-payload',
        aggregateType: 'Payment',
        aggregateId: 'bad',
        payload: { paymentId: 'bad', amount: 'lots', currency: 'euro' },
      }),
    );
    await fixture.send(queueUrl, [notJson, badPayload]);

    // Act
    const esm = await startEventSourceMapping({
      sqs: fixture.as('worker').sqs,
      queueUrl,
      handler,
      maxBatchingWindowMs: 200,
    });
    running.push(esm);
    await esm.drain();

    // Assess
    expect(deliveries).toHaveLength(2);
    expect(outcomes.outcomes.map((o) => o.result)).toEqual(['TERMINAL_FAILURE', 'TERMINAL_FAILURE']);
    expect(esm.stats.deleted).toBe(2);
    const rows = await db.sql`
      select body, reason_code from worker_quarantine where body in (${notJson}, ${badPayload}) order by reason_code
    `;
    expect(rows).toEqual([
      { body: notJson, reason_code: 'INVALID_JSON' },
      { body: badPayload, reason_code: 'INVALID_PAYLOAD' },
    ]);
    expect(await queueCounts(fixture.sqs, queueUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
    expect(await fixture.receiveAll(dlqUrl)).toEqual([]);
  });

  it('applies every FIFO message group in order: no version is ever stale', async () => {
    // Prepare
    const cases = ['fifo-a', 'fifo-b', 'fifo-c'];
    const versions = [1, 2, 3, 4, 5, 6];
    const { queueUrl } = await fixture.queues({ fifo: true, visibilityTimeoutSeconds: 5 });
    const { handler, outcomes, deliveries } = exampleWorker(db, fixture.as('worker').sqs, { pool: 3 });
    await fixture.send(
      queueUrl,
      versions.flatMap((version) =>
        cases.map((caseId) => ({
          body: stageChanged(caseId, version),
          groupId: caseId,
          deduplicationId: `${caseId}-${version}`,
        })),
      ),
    );

    // Act
    const esm = await startEventSourceMapping({
      sqs: fixture.as('worker').sqs,
      queueUrl,
      handler,
      batchSize: 2,
      maxConcurrency: 3,
      pollers: 3,
    });
    running.push(esm);
    await esm.drain();

    // Assess
    for (const caseId of cases) {
      const order = deliveries
        .map((d) => JSON.parse(d.body).payload)
        .filter((payload) => payload.caseId === caseId)
        .map((payload) => payload.version);
      expect(order).toEqual(versions);
    }
    expect(outcomes.counts()).toEqual({ COMPLETED: cases.length * versions.length });
    const rows =
      await db.sql`select case_id, version from cases where case_id like 'fifo-%' order by case_id`;
    expect(rows).toEqual(cases.map((caseId) => ({ case_id: caseId, version: 6 })));
  });
});

describe("Local pipeline as the worker's database role, with one of its grants taken away", () => {
  it('fails the record on its write, naming the role and the privilege, retries it, and lets SQS move it to the DLQ intact', async () => {
    // Prepare: the worker role may no longer insert ledger entries, in this file's database only (a table's
    // privileges belong to its database); given back when the test ends.
    const role = db.roles.worker;
    await db.sql`revoke insert on table ledger_entries from ${db.sql(role)}`;
    onTestFinished(async () => {
      await db.sql`grant insert on table ledger_entries to ${db.sql(role)}`;
    });
    const { queueUrl, dlqUrl } = await fixture.queues({ visibilityTimeoutSeconds: 1, maxReceiveCount: 2 });
    const { handler, outcomes } = exampleWorker(db, fixture.as('worker').sqs);
    const body = payment('no-grant');
    await fixture.send(queueUrl, [body]);

    // Act
    const esm = await startEventSourceMapping({ sqs: fixture.as('worker').sqs, queueUrl, handler });
    running.push(esm);
    await esm.drain({ timeoutMs: 30_000 });

    // Assess: the worker's error path — retryable, the failure named, counted in the inbox — then the DLQ
    const message = `PostgreSQL 42501: permission denied for table ledger_entries to database role ${role} (an insert statement); grant it to the role in lambda/postgres/provision-roles.ts (the migration function applies it on deploy)`;
    const failures = outcomes.outcomes.filter((o) => o.idempotencyKey === 'payment:no-grant');
    expect(failures.map((o) => [o.result, o.failureCode, o.failureMessage])).toEqual([
      ['RETRYABLE_FAILURE', 'POSTGRES_42501', message],
      ['RETRYABLE_FAILURE', 'POSTGRES_42501', message],
    ]);
    const [inbox] = await db.sql`
      select status, receive_count, failure_code, failure_message from worker_inbox
      where idempotency_key = 'payment:no-grant'
    `;
    expect(inbox).toEqual({
      status: 'FAILED_RETRYABLE',
      receive_count: 2,
      failure_code: 'POSTGRES_42501',
      failure_message: message,
    });
    expect(await db.sql`select 1 from ledger_entries where source_event_id = 'no-grant'`).toHaveLength(0);
    expect((await fixture.receiveAll(dlqUrl)).map((m) => m.body)).toEqual([body]);
  });
});
