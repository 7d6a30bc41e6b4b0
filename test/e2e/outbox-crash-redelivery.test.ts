import { randomUUID } from 'node:crypto';
import { ReceiveMessageCommand, type SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { enqueueOutbox } from '../../lambda/outbox/index.ts';
import { type OutboxSqsSender, relayOutbox } from '../../lambda/outbox/relay-outbox.ts';
import { sqsEventRecord } from '../../lambda/sqs/sqs-event-record.ts';
import { lambdaContext } from '../../tools/local/lambda-context.ts';
import { createTestDatabase } from '../support/database.ts';
import { exampleWorker } from '../support/test-worker.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

// The components connect as their database roles (provisioned by the migration function's code); the test's own
// setup and assertions as the database's owner.
const db = await createTestDatabase({ roles: true });
const local = await localQueueFixture();

describe('Function: relayOutbox() crash between send and mark', () => {
  it('sends the event twice and the worker applies it once', async () => {
    // Prepare: the producer creates a case and requests its deadline atomically (the example of docs/outbox.md).
    const { queueUrl, queueArn } = await local.queues();
    const caseId = `CASE-${randomUUID()}`;
    const idempotencyKey = `case:${caseId}:deadline:INVESTIGATION`;
    await db.sql.begin(async (sql) => {
      await sql`insert into cases (case_id, stage, version) values (${caseId}, 'INVESTIGATION', 1)`;
      await enqueueOutbox(sql, {
        messageId: `msg_${randomUUID()}`,
        schemaVersion: 1,
        messageType: 'CaseDeadlineCalculationRequested',
        producer: 'case-service',
        occurredAt: new Date().toISOString(),
        idempotencyKey,
        aggregateType: 'case',
        aggregateId: caseId,
        payload: { caseId, stage: 'INVESTIGATION', effectiveAt: '2026-07-06T10:15:00Z' },
      });
    });
    // The first relay loses its database right after SQS accepted the batch (the process "dies").
    const doomedSql = db.as('relay', { max: 1 });
    const crashingSqs: OutboxSqsSender = {
      async send(command: SendMessageBatchCommand) {
        const output = await local.as('relay').sqs.send(command);
        await doomedSql.end();
        return output;
      },
    };

    // Act
    const crashed = relayOutbox({
      sql: doomedSql,
      sqs: crashingSqs,
      queueUrl,
      deadline: Date.now() + 30_000,
      relayId: 'relay-1',
    });
    await expect(crashed).rejects.toMatchObject({ code: 'CONNECTION_ENDED' });
    const [afterCrash] =
      await db.sql`select status, locked_by, attempts from outbox_events where idempotency_key = ${idempotencyKey}`;
    const early = await relayOutbox({
      sql: db.as('relay'),
      sqs: local.as('relay').sqs,
      queueUrl,
      deadline: Date.now() + 30_000,
      relayId: 'relay-2',
    });
    const laterClock = () => new Date(Date.now() + 60_000); // relay-1's 30 s lease has run out
    const retried = await relayOutbox({
      sql: db.as('relay'),
      sqs: local.as('relay').sqs,
      queueUrl,
      clock: laterClock,
      deadline: laterClock().getTime() + 30_000,
      relayId: 'relay-2',
    });
    const { Messages = [] } = await local.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        MessageSystemAttributeNames: ['All'],
      }),
    );
    const worker = exampleWorker(db.as('worker'));
    const responses = [];
    for (const message of Messages) {
      const record = sqsEventRecord(message, { eventSourceArn: queueArn, awsRegion: 'us-east-1' });
      responses.push(
        await worker(
          { Records: [record] },
          lambdaContext({ functionName: 'case-worker', timeoutMs: 30_000 }),
        ),
      );
    }

    // Assess
    expect(afterCrash).toMatchObject({ status: 'PENDING', locked_by: 'relay-1', attempts: 1 });
    expect(early.published).toBe(0); // the lease keeps other relays off while it lasts
    expect(retried.published).toBe(1);
    expect(Messages).toHaveLength(2);
    expect(new Set(Messages.map((m) => m.MessageId)).size).toBe(2);
    expect(Messages.map((m) => JSON.parse(m.Body ?? '{}').idempotencyKey)).toEqual([
      idempotencyKey,
      idempotencyKey,
    ]);
    expect(responses).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
    const [outbox] =
      await db.sql`select status, attempts, sqs_message_id from outbox_events where idempotency_key = ${idempotencyKey}`;
    expect(outbox).toMatchObject({ status: 'PUBLISHED', attempts: 2 });
    expect(Messages.map((m) => m.MessageId)).toContain(outbox?.sqs_message_id);
    const inbox = await db.sql`select status from worker_inbox where idempotency_key = ${idempotencyKey}`;
    expect(inbox).toEqual([{ status: 'COMPLETED' }]);
    const [caseRow] = await db.sql`select deadline_version from cases where case_id = ${caseId}`;
    expect(caseRow?.deadline_version).toBe(1);
    const deadlines = await db.sql`select deadline_type from case_deadlines where case_id = ${caseId}`;
    expect(deadlines).toEqual([{ deadline_type: 'INVESTIGATION_SLA' }]);
  });
});
