import { createHash } from 'node:crypto';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { OperationError } from '../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { quarantineList } from '../../tools/ops/quarantine-list.ts';
import { quarantineRelease } from '../../tools/ops/quarantine-release.ts';
import { quarantineShow } from '../../tools/ops/quarantine-show.ts';
import { createTestDatabase } from '../support/database.ts';
import { createQueues, depth, paymentEnvelope, seedInbox, startOpsSqs } from './ops-fixture.ts';

const db = await createTestDatabase();
const { sqs } = await startOpsSqs();

/** Quarantines an envelope as the worker does (Lambda-shaped message attributes). */
async function quarantine(
  envelope: Record<string, unknown> | string,
  reasonCode: string,
  consumer = 'case-worker',
) {
  const body = typeof envelope === 'string' ? envelope : JSON.stringify(envelope);
  const key = typeof envelope === 'string' ? null : (envelope.idempotencyKey as string);
  const [row] = await db.sql<{ id: string }[]>`
    insert into worker_quarantine (
      consumer, body_hash, body, sqs_message_id, idempotency_key, message_type, reason_code, reason_message,
      sqs_attributes, message_attributes
    ) values (
      ${consumer}, ${createHash('sha256').update(body).digest('hex')}, ${body}, 'm-1', ${key},
      ${typeof envelope === 'string' ? null : 'PaymentCaptured'}, ${reasonCode}, 'seeded',
      ${db.sql.json({ ApproximateReceiveCount: '1' })},
      ${db.sql.json({ tenant: { stringValue: 'acme', stringListValues: [], binaryListValues: [], dataType: 'String' } })}
    ) returning quarantine_id::text as id
  `;
  return row?.id as string;
}

describe('Function: quarantineList()', () => {
  it('lists unreleased entries without bodies, filterable by reason', async () => {
    // Prepare
    const consumer = 'list-worker';
    await quarantine(paymentEnvelope(1), 'ACCOUNT_CLOSED', consumer);
    await quarantine(paymentEnvelope(2), 'INVALID_PAYLOAD', consumer);
    const released = await quarantine(paymentEnvelope(3), 'ACCOUNT_CLOSED', consumer);
    await db.sql`update worker_quarantine set released_at = now() where quarantine_id = ${released}`;
    const out = createMemoryOutput();

    // Act
    const all = await quarantineList({ sql: db.sql, out }, { consumer });
    const closed = await quarantineList(
      { sql: db.sql, out: createMemoryOutput() },
      { consumer, reasonCode: 'ACCOUNT_CLOSED', includeReleased: true },
    );

    // Assess
    expect(all.entries).toHaveLength(2);
    expect(all.byReason).toEqual({ ACCOUNT_CLOSED: 1, INVALID_PAYLOAD: 1 });
    expect(closed.entries).toHaveLength(2);
    expect(out.stdout()).toContain('INVALID_PAYLOAD');
    expect(out.stdout()).not.toContain('ACC-1');
  });
});

describe('Function: quarantineShow()', () => {
  it('shows one entry with its body, on request', async () => {
    // Prepare
    const id = await quarantine(paymentEnvelope(10), 'ACCOUNT_CLOSED');
    const out = createMemoryOutput();

    // Act
    const entry = await quarantineShow({ sql: db.sql, out }, { quarantineId: id });

    // Assess
    expect(entry).toMatchObject({ quarantineId: id, reasonCode: 'ACCOUNT_CLOSED' });
    expect(out.stdout()).toContain('Body (contains payload values):');
    expect(out.stdout()).toContain('"accountId": "ACC-1"');
  });
});

describe('Function: quarantineRelease()', () => {
  it('re-sends the body with its attributes, re-arms the inbox row, marks the entry released, audited', async () => {
    // Prepare
    const { queueUrl } = await createQueues(sqs);
    const envelope = paymentEnvelope(20);
    await seedInbox(db.sql, envelope, {
      status: 'FAILED_TERMINAL',
      failureCode: 'ACCOUNT_CLOSED',
      attempts: 5,
    });
    const id = await quarantine(envelope, 'ACCOUNT_CLOSED');

    // Act
    const result = await quarantineRelease(
      { sql: db.sql, sqs, out: createMemoryOutput() },
      { quarantineId: id, queueUrl, consumer: 'case-worker', actor: 'test-operator' },
    );

    // Assess
    const received = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MessageAttributeNames: ['All'] }),
    );
    const [message] = received.Messages ?? [];
    expect(message?.Body).toBe(JSON.stringify(envelope));
    expect(message?.MessageAttributes?.tenant?.StringValue).toBe('acme');
    expect(result).toMatchObject({
      releasedMessageId: message?.MessageId,
      inboxStatusBefore: 'FAILED_TERMINAL',
      inboxRearmed: true,
    });
    const [entry] =
      await db.sql`select released_at, released_message_id from worker_quarantine where quarantine_id = ${id}`;
    expect(entry?.released_at).toBeInstanceOf(Date);
    expect(entry?.released_message_id).toBe(message?.MessageId);
    const [inbox] =
      await db.sql`select status, receive_count from worker_inbox where idempotency_key = ${envelope.idempotencyKey as string}`;
    expect(inbox).toEqual({ status: 'FAILED_RETRYABLE', receive_count: 0 });
    const [audit] =
      await db.sql`select action, outcome, new_message_id, actor from ops_audit where audit_id = ${result.auditId}`;
    expect(audit).toEqual({
      action: 'quarantine_release',
      outcome: 'DONE',
      new_message_id: message?.MessageId,
      actor: 'test-operator',
    });
  });

  it('refuses to release an entry twice and sends nothing', async () => {
    // Prepare
    const { queueUrl } = await createQueues(sqs);
    const id = await quarantine(paymentEnvelope(30), 'ACCOUNT_CLOSED');
    await quarantineRelease(
      { sql: db.sql, sqs, out: createMemoryOutput() },
      { quarantineId: id, queueUrl, consumer: 'case-worker' },
    );

    // Act
    const error = await quarantineRelease(
      { sql: db.sql, sqs, out: createMemoryOutput() },
      { quarantineId: id, queueUrl, consumer: 'case-worker' },
    ).catch((caught: unknown) => caught);

    // Assess
    expect(error).toBeInstanceOf(OperationError);
    expect((error as Error).message).toContain('was already released');
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 1, inFlight: 0 });
  });

  it('rolls back when the send fails: the entry stays unreleased and the inbox row unchanged', async () => {
    // Prepare
    const envelope = paymentEnvelope(40);
    await seedInbox(db.sql, envelope, {
      status: 'FAILED_TERMINAL',
      failureCode: 'ACCOUNT_CLOSED',
      attempts: 5,
    });
    const id = await quarantine(envelope, 'ACCOUNT_CLOSED');

    // Act: a queue that does not exist makes the real SendMessage fail.
    const { queueUrl } = await createQueues(sqs);
    const error = await quarantineRelease(
      { sql: db.sql, sqs, out: createMemoryOutput() },
      { quarantineId: id, queueUrl: `${queueUrl}-missing`, consumer: 'case-worker' },
    ).catch((caught: unknown) => caught);

    // Assess
    expect(error).toBeInstanceOf(OperationError);
    expect((error as Error).message).toContain('Nothing was changed');
    const [entry] = await db.sql`select released_at from worker_quarantine where quarantine_id = ${id}`;
    expect(entry?.released_at).toBeNull();
    const [inbox] =
      await db.sql`select status, receive_count from worker_inbox where idempotency_key = ${envelope.idempotencyKey as string}`;
    expect(inbox).toEqual({ status: 'FAILED_TERMINAL', receive_count: 5 });
    const [audit] =
      await db.sql`select count(*)::int as n from ops_audit where detail->>'quarantineId' = ${id}`;
    expect(audit?.n).toBe(0);
  });
});
