import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTestDatabase } from '../support/database.ts';
import { startFakeNotificationProvider } from '../support/fake-notification-provider.ts';
import { envelopeFactory, lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';

const db = await createTestDatabase();
const provider = await startFakeNotificationProvider();

describe('Module: lambda/handlers/worker.ts (the deployable entry point)', () => {
  it('wires config, clients and the example domain, escalation included when NOTIFICATION_URL is set', async () => {
    // Prepare: the environment a deployed function would have, pointing at the test database.
    Object.assign(process.env, {
      DATABASE_URL: db.url,
      NOTIFICATION_URL: provider.url,
      WORKER_CONSUMER: 'entry-test',
    });
    const { handler } = await import('../../lambda/handlers/worker.ts');
    const caseId = `CASE-${randomUUID()}`;
    const stage = envelopeFactory({
      messageType: 'CaseStageChanged',
      idempotencyKey: `stage:${caseId}`,
      payload: { caseId, stage: 'REVIEW', version: 1 },
    });
    const escalation = envelopeFactory({
      messageType: 'CaseEscalationRequested',
      idempotencyKey: `escalation:${caseId}`,
      payload: { caseId, recipient: 'ops@example.com' },
    });
    const escalationRecord = sqsRecordFactory(escalation);

    // Act: the stage change, the escalation, and the escalation again (a duplicate delivery).
    const first = await handler(sqsEvent([sqsRecordFactory(stage), escalationRecord]), lambdaContext());
    const again = await handler(
      sqsEvent([{ ...escalationRecord, receiptHandle: 'second' }]),
      lambdaContext(),
    );

    // Assess
    expect([first, again]).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
    expect(provider.applied).toBe(1);
    expect(provider.calls).toBe(1);
    expect(await db.sql`select case_id from case_notifications where case_id = ${caseId}`).toHaveLength(1);
    const inbox =
      await db.sql`select consumer, status from worker_inbox where idempotency_key = ${`escalation:${caseId}`}`;
    expect(inbox).toEqual([{ consumer: 'entry-test', status: 'COMPLETED' }]);
  });
});
