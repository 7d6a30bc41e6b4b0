import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { caseEscalationRequested, exampleHandlers } from '../../lambda/domain/index.ts';
import { httpNotificationProvider } from '../../lambda/effects/index.ts';
import type { NotificationProvider } from '../../lambda/effects/notification-provider.ts';
import { BatchFailedError } from '../../lambda/errors.ts';
import { createTestDatabase } from '../support/database.ts';
import { escalationEnvelope } from '../support/escalation-envelope.ts';
import { startFakeNotificationProvider } from '../support/fake-notification-provider.ts';
import { envelopeFactory, lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';
import { exampleWorker } from '../support/test-worker.ts';

const db = await createTestDatabase();
const fake = await startFakeNotificationProvider();
const http = httpNotificationProvider({ url: fake.url, name: 'fake-notifications' });

// As deployed: the worker's pool has ONE connection; the effect log has its own client. The worker role's
// lock_timeout (5 s) is lowered to 300 ms for the worker's client.
const workerSql = db.client({ max: 1, connection: { lock_timeout: 300 } });
const effectsSql = db.client({ max: 1 });

/** Delegates to the HTTP provider; `afterSend` runs once after the next successful send. */
const provider: NotificationProvider & { afterSend?: () => Promise<void> } = {
  name: http.name,
  async send(request, key) {
    const answer = await http.send(request, key);
    const hook = provider.afterSend;
    provider.afterSend = undefined;
    await hook?.();
    return answer;
  },
};
const worker = exampleWorker(workerSql, {
  handlers: [...exampleHandlers, caseEscalationRequested({ effectsSql, provider })],
});

const createCase = async () => {
  const caseId = `CASE-${randomUUID()}`;
  await db.sql`insert into cases (case_id, stage, version) values (${caseId}, 'INVESTIGATION', 1)`;
  return caseId;
};
const notifications = (caseId: string) => db.sql`select * from case_notifications where case_id = ${caseId}`;
const inboxStatus = async (key: string) =>
  (await db.sql`select status from worker_inbox where idempotency_key = ${key}`)[0]?.status;

describe('Handler: CaseEscalationRequested (external effect through the effect log)', () => {
  it('notifies once and records the reference; a redelivery after COMPLETED does not call the provider', async () => {
    // Prepare
    const caseId = await createCase();
    const envelope = escalationEnvelope(caseId);
    const record = sqsRecordFactory(envelope);
    const [callsBefore, appliedBefore] = [fake.calls, fake.applied];

    // Act
    const first = await worker(sqsEvent([record]), lambdaContext());
    const redelivered = await worker(sqsEvent([{ ...record, receiptHandle: 'rh-2' }]), lambdaContext());

    // Assess
    expect(first.batchItemFailures).toEqual([]);
    expect(redelivered.batchItemFailures).toEqual([]);
    expect(fake.calls).toBe(callsBefore + 1);
    expect(fake.applied).toBe(appliedBefore + 1);
    const rows = await notifications(caseId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      effect_key: `case-worker/escalation-notification:${envelope.idempotencyKey}`,
    });
    const [log] =
      await db.sql`select status, provider_reference from external_effect_log where effect_key = ${rows[0]?.effect_key}`;
    expect(log).toEqual({ status: 'COMPLETED', provider_reference: rows[0]?.provider_reference });
    expect(await inboxStatus(String(envelope.idempotencyKey))).toBe('COMPLETED');
  });

  it('applies the notification once when the inbox transaction fails after the provider answered', async () => {
    // Prepare
    const caseId = await createCase();
    const envelope = escalationEnvelope(caseId);
    const key = String(envelope.idempotencyKey);
    const [callsBefore, appliedBefore] = [fake.calls, fake.applied];
    // Once the provider has answered, another transaction holds the notification row the handler is about
    // to insert: the handler's insert hits the lock timeout and the whole inbox transaction rolls back.
    let releaseBlocker: () => void = () => {};
    const blockerDone = new Promise<void>((resolve) => {
      releaseBlocker = resolve;
    });
    let blocker: Promise<unknown> = Promise.resolve();
    provider.afterSend = async () => {
      let locked: () => void = () => {};
      const isLocked = new Promise<void>((resolve) => {
        locked = resolve;
      });
      blocker = db.sql
        .begin(async (sql) => {
          await sql`
            insert into case_notifications (source_event_id, case_id, recipient, effect_key, provider_reference)
            values (${key}, ${caseId}, 'blocker', ${`case-worker/escalation-notification:${key}`}, 'blocker')
          `;
          locked();
          await blockerDone;
          throw new Error('blocker rolls back');
        })
        .catch(() => {});
      await isLocked;
    };

    // Act
    const crashed = worker(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext());
    await expect(crashed).rejects.toBeInstanceOf(BatchFailedError); // its only record failed (LOCK_TIMEOUT)
    releaseBlocker();
    await blocker;
    const afterFailure = await notifications(caseId);
    const [inboxAfterFailure] =
      await db.sql`select status, failure_code from worker_inbox where idempotency_key = ${key}`;
    const retried = await worker(
      sqsEvent([sqsRecordFactory(envelope, { receiveCount: 2 })]),
      lambdaContext(),
    );

    // Assess
    expect(inboxAfterFailure).toEqual({ status: 'FAILED_RETRYABLE', failure_code: 'LOCK_TIMEOUT' });
    expect(afterFailure).toHaveLength(0);
    expect(retried.batchItemFailures).toEqual([]);
    expect(fake.calls).toBe(callsBefore + 1); // the retry found COMPLETED in the log: no second call
    expect(fake.applied).toBe(appliedBefore + 1);
    const rows = await notifications(caseId);
    expect(rows).toHaveLength(1);
    expect(rows[0]?.recipient).toBe('duty-officer@example.com');
    expect(await inboxStatus(key)).toBe('COMPLETED');
  });

  it('per-batch: notifies once when a later record fails and the batch runs again with savepoints', async () => {
    // Prepare: the escalation runs first; the record after it fails (no such case), so the attempt without
    // savepoints is rolled back whole, the escalation's own inbox transaction with it, and the batch reruns.
    const batchWorker = exampleWorker(db.client({ max: 1 }), {
      handlers: [...exampleHandlers, caseEscalationRequested({ effectsSql, provider })],
      commitMode: 'per-batch',
    });
    const caseId = await createCase();
    const envelope = escalationEnvelope(caseId);
    const failing = envelopeFactory({
      messageType: 'CaseDeadlineCalculationRequested',
      idempotencyKey: `deadline:${randomUUID()}`,
      payload: {
        caseId: `CASE-missing-${randomUUID()}`,
        stage: 'INVESTIGATION',
        effectiveAt: '2026-07-06T10:15:00Z',
      },
      attemptPolicy: { terminalAfterCodes: ['CASE_NOT_FOUND'] },
    });
    const records = [sqsRecordFactory(envelope), sqsRecordFactory(failing)];
    const [callsBefore, appliedBefore] = [fake.calls, fake.applied];

    // Act
    const response = await batchWorker(sqsEvent(records), lambdaContext());

    // Assess: the failing record is quarantined (acknowledged); the provider was called once, the
    // notification recorded once.
    expect(response.batchItemFailures).toEqual([]);
    expect(fake.calls).toBe(callsBefore + 1);
    expect(fake.applied).toBe(appliedBefore + 1);
    expect(await notifications(caseId)).toHaveLength(1);
    expect(await inboxStatus(String(envelope.idempotencyKey))).toBe('COMPLETED');
    expect(await inboxStatus(String(failing.idempotencyKey))).toBe('FAILED_TERMINAL');
  });

  it('sends nothing for a case that does not exist yet, and retries it (retryable CASE_NOT_FOUND)', async () => {
    // Prepare
    const envelope = escalationEnvelope(`CASE-${randomUUID()}`);
    const record = sqsRecordFactory(envelope);
    const callsBefore = fake.calls;

    // Act
    const failure = await worker(sqsEvent([record]), lambdaContext()).catch((error: unknown) => error);

    // Assess: reported for a later attempt, counted, not quarantined, nothing sent
    expect(failure).toBeInstanceOf(BatchFailedError);
    expect(fake.calls).toBe(callsBefore);
    const [row] =
      await db.sql`select status, failure_code, receive_count from worker_inbox where idempotency_key = ${String(envelope.idempotencyKey)}`;
    expect(row).toEqual({ status: 'FAILED_RETRYABLE', failure_code: 'CASE_NOT_FOUND', receive_count: 1 });
    const quarantined =
      await db.sql`select 1 from worker_quarantine where idempotency_key = ${String(envelope.idempotencyKey)}`;
    expect(quarantined).toHaveLength(0);
  });

  it('fans out: two consumers sharing the database each notify once, under keys of their own', async () => {
    // Prepare: the same message delivered to two workers (two queues subscribed to one topic)
    const caseId = await createCase();
    const envelope = escalationEnvelope(caseId);
    const workers = ['case-worker', 'audit-worker'].map((consumer) =>
      exampleWorker(db.client({ max: 1 }), {
        consumer,
        handlers: [...exampleHandlers, caseEscalationRequested({ effectsSql, provider })],
      }),
    );
    const [callsBefore, appliedBefore] = [fake.calls, fake.applied];

    // Act: each consumer gets it, then a redelivery to each
    for (const consumerWorker of workers) {
      expect(
        (await consumerWorker(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext())).batchItemFailures,
      ).toEqual([]);
    }
    for (const consumerWorker of workers)
      await consumerWorker(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext());

    // Assess: one provider call per consumer, each effect logged under its consumer, both inbox rows COMPLETED
    expect(fake.calls).toBe(callsBefore + 2);
    expect(fake.applied).toBe(appliedBefore + 2);
    const log = await db.sql`
      select effect_key, provider_key, status from external_effect_log
      where effect_key like ${`%:${String(envelope.idempotencyKey)}`} order by effect_key
    `;
    expect(log).toEqual([
      {
        effect_key: `audit-worker/escalation-notification:${envelope.idempotencyKey}`,
        provider_key: `audit-worker/escalation-notification:${envelope.idempotencyKey}`,
        status: 'COMPLETED',
      },
      {
        effect_key: `case-worker/escalation-notification:${envelope.idempotencyKey}`,
        provider_key: `case-worker/escalation-notification:${envelope.idempotencyKey}`,
        status: 'COMPLETED',
      },
    ]);
    const inbox = await db.sql`
      select consumer, status from worker_inbox where idempotency_key = ${String(envelope.idempotencyKey)} order by consumer
    `;
    expect(inbox).toEqual([
      { consumer: 'audit-worker', status: 'COMPLETED' },
      { consumer: 'case-worker', status: 'COMPLETED' },
    ]);
  });
});
