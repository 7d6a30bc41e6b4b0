import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Message } from '@aws-sdk/client-sqs';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { sqsEventRecord } from '../../../../lambda/sqs/sqs-event-record.ts';
import type { Envelope } from '../../../../lambda/worker/envelope.ts';
import { readEditedBody } from '../../../../tools/ops/edited-release.ts';
import { UsageError } from '../../../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../../../tools/ops/memory-output.ts';
import { quarantineRelease } from '../../../../tools/ops/stores/postgres/quarantine-release.ts';
import { createTestDatabase } from '../../../support/database.ts';
import { lambdaContext, sqsEvent, sqsRecordFactory } from '../../../support/sqs-event.ts';
import { exampleWorker } from '../../../support/test-worker.ts';
import { createQueues, paymentEnvelope, startOpsSqs } from '../../ops-fixture.ts';

const db = await createTestDatabase();
const { sqs } = await startOpsSqs();
const consumer = 'case-worker';
const dir = await mkdtemp(join(tmpdir(), 'edit-release-'));
const worker = exampleWorker(db.sql);

/** A file holding `envelope` as the operator edited it. */
async function editFile(name: string, envelope: Envelope) {
  const path = join(dir, name);
  await writeFile(path, JSON.stringify(envelope, null, 2));
  return readEditedBody(path);
}

/** The worker processes one message of the queue (the released copy). */
async function processReleased(queueUrl: string, queueArn: string) {
  const { Messages } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 1,
      MessageSystemAttributeNames: ['All'],
    }),
  );
  const message = Messages?.[0] as Message;
  expect(message).toBeDefined();
  return worker(
    sqsEvent([sqsEventRecord(message, { eventSourceArn: queueArn, awsRegion: 'us-east-1' })]),
    lambdaContext(),
  );
}

const quarantineOf = async (key: string) =>
  (
    await db.sql`
      select quarantine_id::text as id, released_at, released_as_key from worker_quarantine
      where consumer = ${consumer} and idempotency_key = ${key}
    `
  )[0];
const inboxStatus = async (key: string) =>
  (await db.sql`select status from worker_inbox where consumer = ${consumer} and idempotency_key = ${key}`)[0]
    ?.status;

describe('Command: quarantine release --edit (PostgreSQL)', () => {
  it('sends the corrected body as <key>:v2, which the worker completes; a second edit goes out as :v3', async () => {
    // Prepare: a payment whose currency the handler's schema refuses (INVALID_PAYLOAD, quarantined).
    const { queueUrl, queueArn } = await createQueues(sqs);
    const bad = paymentEnvelope(1, {});
    (bad.payload as Record<string, unknown>).currency = 'euro';
    const paymentId = (bad.payload as { paymentId: string }).paymentId;
    await worker(sqsEvent([sqsRecordFactory(JSON.stringify(bad))]), lambdaContext());
    const original = await quarantineOf(bad.idempotencyKey);
    expect(original).toMatchObject({ released_at: null });
    const fixed = { ...bad, payload: { ...bad.payload, currency: 'EUR' } };

    // Act: release it edited; the worker processes the copy.
    const released = await quarantineRelease(
      { sql: db.sql, sqs, out: createMemoryOutput() },
      {
        quarantineId: original.id,
        queueUrl,
        consumer,
        actor: 'test-operator',
        edit: await editFile('v2.json', fixed),
      },
    );
    const response = await processReleased(queueUrl, queueArn);

    // Assess: the new key is COMPLETED with its effect; the original entry is marked released as it; the audit links them.
    const v2 = `${bad.idempotencyKey}:v2`;
    expect(released.edit).toMatchObject({ releasedAsKey: v2, forced: false });
    expect(response).toEqual({ batchItemFailures: [] });
    expect(await inboxStatus(v2)).toBe('COMPLETED');
    expect(await db.sql`select currency from ledger_entries where source_event_id = ${paymentId}`).toEqual([
      { currency: 'EUR' },
    ]);
    expect(await quarantineOf(bad.idempotencyKey)).toMatchObject({ released_as_key: v2 });
    const [audit] =
      await db.sql`select idempotency_key, actor, detail from ops_audit where audit_id = ${released.auditId}`;
    expect(audit).toMatchObject({
      idempotency_key: bad.idempotencyKey,
      actor: 'test-operator',
      detail: { edited: true, releasedAsKey: v2, inboxRearmed: false },
    });
    expect(audit?.detail.originalBodyHash).toMatch(/^[0-9a-f]{64}$/);
    expect(audit?.detail.editedBodyHash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(audit?.detail)).not.toContain('euro');

    // Act: another copy of the original arrives (the entry is open again) and is edited once more.
    // The completed v2 is a newer event of the aggregate: the release names it and goes ahead only with --force.
    await worker(sqsEvent([sqsRecordFactory(JSON.stringify(bad))]), lambdaContext());
    const second = {
      quarantineId: original.id,
      queueUrl,
      consumer,
      edit: await editFile('v3.json', {
        ...fixed,
        payload: { ...fixed.payload, paymentId: `${paymentId}-b` },
      }),
    };
    await expect(quarantineRelease({ sql: db.sql, sqs, out: createMemoryOutput() }, second)).rejects.toThrow(
      `key ${v2}) completed`,
    );
    const again = await quarantineRelease(
      { sql: db.sql, sqs, out: createMemoryOutput() },
      { ...second, force: true },
    );
    await processReleased(queueUrl, queueArn);

    // Assess: v2 exists, so the next version is v3.
    expect(again.edit?.releasedAsKey).toBe(`${bad.idempotencyKey}:v3`);
    expect(await inboxStatus(`${bad.idempotencyKey}:v3`)).toBe('COMPLETED');
    expect(await inboxStatus(bad.idempotencyKey)).toBe('FAILED_TERMINAL'); // the original key: never applied
  });

  it('refuses an edit that is not JSON, or moves the message to another aggregate, sending nothing', async () => {
    // Prepare
    const { queueUrl } = await createQueues(sqs);
    const bad = paymentEnvelope(2);
    (bad.payload as Record<string, unknown>).currency = 'euro';
    await worker(sqsEvent([sqsRecordFactory(JSON.stringify(bad))]), lambdaContext());
    const entry = await quarantineOf(bad.idempotencyKey);
    const notJson = join(dir, 'broken.json');
    await writeFile(notJson, '{"messageType": ');
    const release = (edit: Awaited<ReturnType<typeof readEditedBody>>) =>
      quarantineRelease(
        { sql: db.sql, sqs, out: createMemoryOutput() },
        { quarantineId: entry.id, queueUrl, consumer, edit },
      );

    // Act + Assess
    await expect(release(await readEditedBody(notJson))).rejects.toThrow(/broken\.json: not JSON/);
    const moved = await editFile('moved.json', { ...bad, aggregateId: 'PAY-OTHER' });
    await expect(release(moved)).rejects.toThrow(UsageError);
    await expect(release(moved)).rejects.toThrow(/aggregateId is "PAY-OTHER".*--force-edit/);
    expect(await quarantineOf(bad.idempotencyKey)).toMatchObject({
      released_at: null,
      released_as_key: null,
    });
  });
});
