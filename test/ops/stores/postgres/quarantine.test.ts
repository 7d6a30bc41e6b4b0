import { createHash } from 'node:crypto';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import type { Envelope } from '../../../../lambda/worker/envelope.ts';
import { OperationError, OutOfOrderReleaseError } from '../../../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../../../tools/ops/memory-output.ts';
import { quarantineList } from '../../../../tools/ops/stores/postgres/quarantine-list.ts';
import { quarantineRelease } from '../../../../tools/ops/stores/postgres/quarantine-release.ts';
import { quarantineShow } from '../../../../tools/ops/stores/postgres/quarantine-show.ts';
import { createTestDatabase } from '../../../support/database.ts';
import { createQueues, depth, paymentEnvelope, seedInbox, startOpsSqs } from '../../ops-fixture.ts';

const db = await createTestDatabase();
const { sqs } = await startOpsSqs();

/** Quarantines an envelope as the worker does (Lambda-shaped message attributes). */
async function quarantine(envelope: Envelope | string, reasonCode: string, consumer = 'case-worker') {
  const body = typeof envelope === 'string' ? envelope : JSON.stringify(envelope);
  const key = typeof envelope === 'string' ? null : envelope.idempotencyKey;
  const [row] = await db.sql<{ id: string }[]>`
    insert into worker_quarantine (
      consumer, body_hash, body, sqs_message_id, idempotency_key, message_type, reason_code, reason_message,
      sqs_attributes, message_attributes
    ) values (
      ${consumer}, ${createHash('sha256').update(body).digest('hex')}, ${body}, 'm-1', ${key},
      ${typeof envelope === 'string' ? null : envelope.messageType}, ${reasonCode}, 'seeded',
      ${db.sql.json({ ApproximateReceiveCount: '1' })},
      ${db.sql.json({ tenant: { stringValue: 'acme', stringListValues: [], binaryListValues: [], dataType: 'String' } })}
    ) returning quarantine_id::text as id
  `;
  return row.id;
}

let cases = 0;

/** A case id of its own for each test, so aggregates never overlap. */
function newCaseId(): string {
  cases += 1;
  return `C-${process.pid}-${cases}`;
}

/** An event of a case aggregate (the payload is the example's, with the marker value ACC-1). */
function caseEvent(caseId: string, messageType: string, key: string): Envelope {
  return paymentEnvelope(0, { messageType, aggregateType: 'case', aggregateId: caseId, idempotencyKey: key });
}

const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000);

/**
 * The scenario: a deadline request arrives before its case exists, fails for a while and is quarantined
 * (inbox row FAILED_TERMINAL first seen `seenMinutesAgo`); later events of the case complete.
 */
async function quarantinedDeadline(
  caseId: string,
  options: { withInboxRow?: boolean; seenMinutesAgo?: number } = {},
) {
  const envelope = caseEvent(caseId, 'CaseDeadlineRequested', `case:${caseId}:deadline:1`);
  if (options.withInboxRow !== false) {
    await seedInbox(db.sql, envelope, {
      status: 'FAILED_TERMINAL',
      failureCode: 'CASE_NOT_FOUND',
      attempts: 5,
      firstSeenAt: minutesAgo(options.seenMinutesAgo ?? 60),
    });
  }
  const id = await quarantine(envelope, 'CASE_NOT_FOUND');
  return { envelope, id };
}

/** A COMPLETED inbox row of an event of the case. */
async function completedEvent(
  caseId: string,
  version: number,
  completedAt: Date,
  options: { consumer?: string; messageType?: string } = {},
) {
  await seedInbox(
    db.sql,
    caseEvent(caseId, options.messageType ?? 'CaseStageChanged', `case:${caseId}:stage:v${version}`),
    {
      status: 'COMPLETED',
      firstSeenAt: completedAt,
      completedAt,
      consumer: options.consumer,
    },
  );
}

/** The entry is not released, its inbox row is as the failures left it, and no operator action was audited. */
async function expectNothingChanged(id: string, idempotencyKey: string): Promise<void> {
  const [entry] = await db.sql`select released_at from worker_quarantine where quarantine_id = ${id}`;
  expect(entry?.released_at).toBeNull();
  const [inbox] =
    await db.sql`select status, receive_count from worker_inbox where idempotency_key = ${idempotencyKey}`;
  expect(inbox).toEqual({ status: 'FAILED_TERMINAL', receive_count: 5 });
  const [audit] =
    await db.sql`select count(*)::int as n from ops_audit where detail->>'quarantineId' = ${id}`;
  expect(audit?.n).toBe(0);
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

  it('shows how many newer events of the aggregate completed, from the inbox row or else the envelope', async () => {
    // Prepare
    const caseId = newCaseId();
    const { id } = await quarantinedDeadline(caseId);
    await completedEvent(caseId, 2, minutesAgo(30));
    await completedEvent(caseId, 3, minutesAgo(90)); // before the deadline request was first seen: older
    const bodyOnlyCase = newCaseId();
    const bodyOnly = await quarantinedDeadline(bodyOnlyCase, { withInboxRow: false });
    await completedEvent(bodyOnlyCase, 2, new Date(Date.now() + 60_000));
    const out = createMemoryOutput();

    // Act
    const shown = await quarantineShow({ sql: db.sql, out }, { quarantineId: id });
    const shownBodyOnly = await quarantineShow(
      { sql: db.sql, out: createMemoryOutput() },
      { quarantineId: bodyOnly.id },
    );

    // Assess
    expect(shown).toMatchObject({ aggregateType: 'case', aggregateId: caseId, newerCompletedEvents: 1 });
    expect(out.stdout()).toContain(`Newer completed events of case "${caseId}" completed after this message`);
    expect(out.stdout()).toMatch(/: 1\. "quarantine release \d+" lists them and refuses without --force/);
    expect(shownBodyOnly).toMatchObject({ aggregateId: bodyOnlyCase, newerCompletedEvents: 1 });
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
      await db.sql`select status, receive_count from worker_inbox where idempotency_key = ${envelope.idempotencyKey}`;
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
    await expectNothingChanged(id, envelope.idempotencyKey);
  });

  it('refuses without --force when newer events of the aggregate completed: nothing sent, nothing changed', async () => {
    // Prepare
    const { queueUrl } = await createQueues(sqs);
    const caseId = newCaseId();
    const { envelope, id } = await quarantinedDeadline(caseId, { seenMinutesAgo: 60 });
    // Six newer events: four completed while the request was still being retried, two after its quarantine.
    for (const [version, minutes] of [
      [2, 50],
      [3, 40],
      [4, 30],
      [5, 20],
      [6, -1],
      [7, -2],
    ] as const) {
      await completedEvent(caseId, version, minutesAgo(minutes));
    }
    await completedEvent(caseId, 1, minutesAgo(70)); // older than the request
    await completedEvent(caseId, 8, minutesAgo(10), { consumer: 'other-worker' });
    await completedEvent(newCaseId(), 2, minutesAgo(10)); // another case
    const out = createMemoryOutput();

    // Act
    const error = await quarantineRelease(
      { sql: db.sql, sqs, out },
      { quarantineId: id, queueUrl, consumer: 'case-worker' },
    ).catch((caught: unknown) => caught);

    // Assess
    expect(error).toBeInstanceOf(OutOfOrderReleaseError);
    expect(error).toBeInstanceOf(OperationError);
    const refused = error as OutOfOrderReleaseError;
    expect(refused.exitCode).toBe(1);
    expect(refused.message).toContain(`6 newer event(s) of case "${caseId}"`);
    expect(refused.message).toContain(`CaseStageChanged (key case:${caseId}:stage:v2) completed at`);
    expect(refused.message).toContain(`key case:${caseId}:stage:v6)`);
    expect(refused.message).not.toContain(`key case:${caseId}:stage:v7)`);
    expect(refused.message).toContain('and 1 more');
    expect(refused.message).toContain(
      'roll the state of that aggregate back unless its handler guards by version',
    );
    expect(refused.message).toContain(`re-run with --force: "sqs-worker quarantine release ${id} --force"`);
    expect(refused.message).not.toContain('ACC-1');
    expect(refused.data).toMatchObject({
      quarantineId: id,
      aggregate: { type: 'case', id: caseId, source: 'inbox' },
      newerCompletedEvents: 6,
    });
    expect(refused.newer.events.map((e) => e.idempotencyKey)).toEqual(
      [2, 3, 4, 5, 6].map((v) => `case:${caseId}:stage:v${v}`),
    );
    expect(out.stdout()).toBe('');
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 0, inFlight: 0 });
    await expectNothingChanged(id, envelope.idempotencyKey);
  });

  it('refuses by the envelope aggregate when the message has no inbox row', async () => {
    // Prepare
    const { queueUrl } = await createQueues(sqs);
    const caseId = newCaseId();
    const { id } = await quarantinedDeadline(caseId, { withInboxRow: false });
    await completedEvent(caseId, 2, new Date(Date.now() + 60_000));

    // Act
    const error = await quarantineRelease(
      { sql: db.sql, sqs, out: createMemoryOutput() },
      { quarantineId: id, queueUrl, consumer: 'case-worker' },
    ).catch((caught: unknown) => caught);

    // Assess
    expect(error).toBeInstanceOf(OutOfOrderReleaseError);
    expect((error as OutOfOrderReleaseError).data).toMatchObject({
      aggregate: { type: 'case', id: caseId, source: 'envelope' },
      newerCompletedEvents: 1,
    });
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 0, inFlight: 0 });
  });

  it('releases with force past newer events and records it in the audit detail', async () => {
    // Prepare
    const { queueUrl } = await createQueues(sqs);
    const caseId = newCaseId();
    const { envelope, id } = await quarantinedDeadline(caseId);
    await completedEvent(caseId, 2, minutesAgo(30));
    const out = createMemoryOutput();

    // Act
    const result = await quarantineRelease(
      { sql: db.sql, sqs, out },
      { quarantineId: id, queueUrl, consumer: 'case-worker', force: true },
    );

    // Assess
    expect(result).toMatchObject({ forced: true, newerCompletedEvents: 1, inboxRearmed: true });
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 1, inFlight: 0 });
    const [entry] =
      await db.sql`select released_message_id from worker_quarantine where quarantine_id = ${id}`;
    expect(entry?.released_message_id).toBe(result.releasedMessageId);
    const [inbox] =
      await db.sql`select status from worker_inbox where idempotency_key = ${envelope.idempotencyKey}`;
    expect(inbox?.status).toBe('FAILED_RETRYABLE');
    const [audit] = await db.sql`select detail from ops_audit where audit_id = ${result.auditId}`;
    expect(audit?.detail).toMatchObject({ quarantineId: id, forced: true, newerCompletedEvents: 1 });
    expect(out.stdout()).toContain(`Forced: 1 newer event(s) of case "${caseId}" had completed`);
  });

  it('releases as before when only older events or other aggregates and consumers completed', async () => {
    // Prepare
    const { queueUrl } = await createQueues(sqs);
    const caseId = newCaseId();
    const { id } = await quarantinedDeadline(caseId, { seenMinutesAgo: 60 });
    await completedEvent(caseId, 1, minutesAgo(70));
    await completedEvent(caseId, 2, minutesAgo(10), { consumer: 'other-worker' });
    await completedEvent(newCaseId(), 2, minutesAgo(10));

    // Act
    const result = await quarantineRelease(
      { sql: db.sql, sqs, out: createMemoryOutput() },
      { quarantineId: id, queueUrl, consumer: 'case-worker' },
    );

    // Assess
    expect(result).toMatchObject({ forced: false, newerCompletedEvents: 0, inboxRearmed: true });
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 1, inFlight: 0 });
    const [audit] = await db.sql`select detail from ops_audit where audit_id = ${result.auditId}`;
    expect(audit?.detail).toMatchObject({ forced: false, newerCompletedEvents: 0 });
  });
});
