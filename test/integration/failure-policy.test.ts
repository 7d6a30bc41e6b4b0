import { randomUUID } from 'node:crypto';
import type postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { BatchFailedError, TerminalError } from '../../lambda/errors.ts';
import { claimInbox } from '../../lambda/stores/postgres/inbox.ts';
import { defineHandler } from '../../lambda/stores/postgres/message-handler.ts';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import type { RecordOutcome } from '../../lambda/worker/outcome.ts';
import { requestHash } from '../../lambda/worker/request-hash.ts';
import { holdCaseLock } from '../../tools/local/hold-case-lock.ts';
import { lambdaContext as localLambdaContext } from '../../tools/local/lambda-context.ts';
import { createTestDatabase } from '../support/database.ts';
import { jsonWithNestedArrays, NESTED } from '../support/nested-json.ts';
import { envelopeFactory, lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';
import { proxiedClient } from '../support/tcp-proxy.ts';
import { alwaysRetryable, slowLedgerWrite } from '../support/test-handlers.ts';
import { exampleWorker } from '../support/test-worker.ts';

const db = await createTestDatabase();
const handlers = [...exampleHandlers, alwaysRetryable, slowLedgerWrite];

const payment = () => {
  const paymentId = `PAY-${randomUUID()}`;
  return envelopeFactory({
    idempotencyKey: `payment:${paymentId}`,
    aggregateId: paymentId,
    payload: { paymentId, accountId: 'ACC-1', amount: '5.00', currency: 'EUR' },
  });
};
const paymentId = (envelope: Envelope) => (envelope.payload as { paymentId: string }).paymentId;
const ledgerCount = async (ids: string[]) =>
  Number(
    (await db.sql`select count(*) from ledger_entries where source_event_id in ${db.sql(ids)}`)[0]?.count,
  );
const inboxRow = async (key: string) =>
  (await db.sql`select * from worker_inbox where consumer = 'case-worker' and idempotency_key = ${key}`)[0];
/** Runs `hold` in a transaction on `sql` and keeps that transaction open until `release()`. */
const holdInFlight = async (sql: postgres.Sql, hold: (tx: postgres.TransactionSql) => Promise<void>) => {
  let release: () => void = () => {};
  let held: () => void = () => {};
  const isHeld = new Promise<void>((resolve) => {
    held = resolve;
  });
  const holding = sql.begin(async (tx) => {
    await hold(tx);
    held();
    await new Promise<void>((resolve) => {
      release = resolve;
    });
  });
  await Promise.race([isHeld, holding]);
  return { release: () => release(), holding };
};
const withReceiveCount = (record: ReturnType<typeof sqsRecordFactory>, count: number) => ({
  ...record,
  attributes: { ...record.attributes, ApproximateReceiveCount: String(count) },
});

describe.each(['per-message', 'per-batch'] as const)('Failure policy, commitMode %s', (commitMode) => {
  const worker = exampleWorker(db.sql, { commitMode, handlers });

  it('quarantines and acknowledges each kind of poison message while the rest of the batch completes', async () => {
    // Prepare
    const good = [payment(), payment()];
    const poison = {
      INVALID_JSON: '{"idempotencyKey": "half a message',
      INVALID_ENVELOPE: JSON.stringify({ messageType: 'PaymentCaptured', payload: { paymentId: 'x' } }),
      UNKNOWN_MESSAGE_TYPE: JSON.stringify(envelopeFactory({ messageType: 'CaseTeleported' })),
      UNSUPPORTED_SCHEMA_VERSION: JSON.stringify(envelopeFactory({ schemaVersion: 7 })),
      INVALID_PAYLOAD: JSON.stringify(
        envelopeFactory({ payload: { paymentId: 'p', amount: 'ten', currency: 'euro' } }),
      ),
      LONG_KEY: JSON.stringify(envelopeFactory({ idempotencyKey: 'k'.repeat(300) })),
      // JSON escapes SQS accepts: a NUL, which PostgreSQL text cannot hold, and a lone surrogate, which it would
      // store as U+FFFD (two such keys would be one).
      NUL_KEY: JSON.stringify(envelopeFactory({ idempotencyKey: `payment:${randomUUID()}\u0000` })),
      SURROGATE_KEY: JSON.stringify(envelopeFactory({ idempotencyKey: `payment:${randomUUID()}\ud800` })),
      NUL_TYPE: JSON.stringify(envelopeFactory({ messageType: 'Payment\u0000Captured' })),
    };
    const poisonRecords = Object.values(poison).map((body) => sqsRecordFactory(`${body}${' '.repeat(0)}`));
    const records = [sqsRecordFactory(good[0]), ...poisonRecords, sqsRecordFactory(good[1])];

    // Act
    const response = await worker(sqsEvent(records), lambdaContext());

    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect(await ledgerCount(good.map(paymentId))).toBe(2);
    const quarantined = await db.sql`
      select sqs_message_id, reason_code, body from worker_quarantine where sqs_message_id in ${db.sql(poisonRecords.map((r) => r.messageId))}
    `;
    const byMessage = new Map(quarantined.map((row) => [row.sqs_message_id, row]));
    expect(poisonRecords.map((record) => byMessage.get(record.messageId)?.reason_code)).toEqual([
      'INVALID_JSON',
      'INVALID_ENVELOPE',
      'UNKNOWN_MESSAGE_TYPE',
      'UNSUPPORTED_SCHEMA_VERSION',
      'INVALID_PAYLOAD',
      'INVALID_ENVELOPE',
      'INVALID_ENVELOPE',
      'INVALID_ENVELOPE',
      'INVALID_ENVELOPE',
    ]);
    expect(poisonRecords.map((record) => byMessage.get(record.messageId)?.body)).toEqual(
      poisonRecords.map((r) => r.body),
    );
    expect(await ledgerCount(['p', 'x'])).toBe(0);
  });

  it('answers a batch with a payload nested 5,000 levels with batchItemFailures instead of rejecting: quarantined, or reported with policy dlq', async () => {
    // Prepare: each worker gets two good payments around one whose payload nests 5,000 arrays.
    const deepPayment = () => {
      const envelope = payment();
      return jsonWithNestedArrays({ ...envelope, payload: { ...envelope.payload, extra: NESTED } }, 5_000);
    };
    const batches = {
      quarantine: [payment(), deepPayment(), payment()].map((envelope) => sqsRecordFactory(envelope)),
      dlq: [payment(), deepPayment(), payment()].map((envelope) => sqsRecordFactory(envelope)),
    };
    const dlqWorker = exampleWorker(db.sql, { commitMode, handlers, terminalPolicy: 'dlq' });

    // Act
    const quarantined = await worker(sqsEvent(batches.quarantine), lambdaContext());
    const reported = await dlqWorker(sqsEvent(batches.dlq), lambdaContext());

    // Assess
    expect(quarantined).toEqual({ batchItemFailures: [] });
    expect(reported).toEqual({ batchItemFailures: [{ itemIdentifier: batches.dlq[1]?.messageId }] });
    const good = [batches.quarantine, batches.dlq].flatMap((records) => [records[0], records[2]]);
    const goodIds = good.map((record) => paymentId(JSON.parse(record?.body ?? '{}')));
    expect(await ledgerCount(goodIds)).toBe(4);
    const deepIds = [batches.quarantine[1], batches.dlq[1]].map((record) =>
      paymentId(JSON.parse(record?.body ?? '{}')),
    );
    expect(await ledgerCount(deepIds)).toBe(0);
    const rows = await db.sql`
      select sqs_message_id, reason_code, body from worker_quarantine
      where sqs_message_id in ${db.sql([batches.quarantine[1]?.messageId ?? '', batches.dlq[1]?.messageId ?? ''])}
    `;
    expect(rows).toEqual([
      {
        sqs_message_id: batches.quarantine[1]?.messageId,
        reason_code: 'PAYLOAD_TOO_DEEP',
        body: batches.quarantine[1]?.body,
      },
    ]);
  });

  it('quarantines a TerminalError (FAILED_TERMINAL, acknowledged) and, with policy dlq, reports it instead', async () => {
    // Prepare
    const missingCase = () =>
      envelopeFactory({
        messageType: 'CaseDeadlineCalculationRequested',
        idempotencyKey: `deadline:${randomUUID()}`,
        payload: { caseId: `CASE-${randomUUID()}`, stage: 'REVIEW', effectiveAt: '2026-07-06T10:15:00Z' },
        // A missing case is retryable by default (it may arrive later); this producer makes it terminal at once.
        attemptPolicy: { terminalAfterCodes: ['CASE_NOT_FOUND'] },
      });
    const quarantineCase = missingCase();
    const dlqCase = missingCase();
    const dlqWorker = exampleWorker(db.sql, { commitMode, handlers, terminalPolicy: 'dlq' });
    const dlqRecord = sqsRecordFactory(dlqCase);

    // Act
    const quarantined = await worker(sqsEvent([sqsRecordFactory(quarantineCase)]), lambdaContext());
    const reported = await dlqWorker(sqsEvent([dlqRecord, sqsRecordFactory(payment())]), lambdaContext());
    const redelivered = await worker(sqsEvent([sqsRecordFactory(quarantineCase)]), lambdaContext());

    // Assess
    expect(quarantined).toEqual({ batchItemFailures: [] });
    expect(reported).toEqual({ batchItemFailures: [{ itemIdentifier: dlqRecord.messageId }] });
    expect(redelivered).toEqual({ batchItemFailures: [] });
    expect(await inboxRow(quarantineCase.idempotencyKey)).toMatchObject({
      status: 'FAILED_TERMINAL',
      failure_code: 'CASE_NOT_FOUND',
      receive_count: 2,
    });
    expect(await inboxRow(dlqCase.idempotencyKey)).toMatchObject({
      status: 'FAILED_TERMINAL',
      failure_code: 'CASE_NOT_FOUND',
    });
    const rows = await db.sql`
      select idempotency_key, reason_code, occurrences from worker_quarantine
      where idempotency_key in ${db.sql([quarantineCase.idempotencyKey, dlqCase.idempotencyKey])}
    `;
    // Quarantined once (the redelivery of the same body counts an occurrence); the dlq-policy message is not.
    expect(rows).toEqual([
      { idempotency_key: quarantineCase.idempotencyKey, reason_code: 'CASE_NOT_FOUND', occurrences: 2 },
    ]);
  });

  it('quarantines and acknowledges a TerminalError whose code is longer than a code may be, with the code cut', async () => {
    // Prepare: a handler's code of 450 characters; the inbox and quarantine keep codes of up to 100.
    const longCode = `CODE_${'X'.repeat(445)}`;
    const longCoded = defineHandler({
      messageType: 'LongCoded',
      schemaVersion: 1,
      payload: z.object({}),
      async handle() {
        throw new TerminalError(longCode, 'the handler refused it');
      },
    });
    const longWorker = exampleWorker(db.sql, { commitMode, handlers: [...handlers, longCoded] });
    const envelope = envelopeFactory({
      messageType: 'LongCoded',
      idempotencyKey: `long:${randomUUID()}`,
      payload: {},
    });
    const good = payment();
    const seen: RecordOutcome[] = [];
    const observed = exampleWorker(db.sql, {
      commitMode,
      handlers: [...handlers, longCoded],
      onOutcome: (outcome) => seen.push(outcome),
    });

    // Act
    const response = await longWorker(
      sqsEvent([sqsRecordFactory(envelope), sqsRecordFactory(good)]),
      lambdaContext(),
    );
    const redelivered = await observed(
      sqsEvent([sqsRecordFactory(envelope, { receiveCount: 2 })]),
      lambdaContext(),
    );

    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect(redelivered).toEqual({ batchItemFailures: [] });
    expect(await ledgerCount([paymentId(good)])).toBe(1);
    expect(await inboxRow(envelope.idempotencyKey)).toMatchObject({
      status: 'FAILED_TERMINAL',
      failure_code: longCode.slice(0, 100),
    });
    const [row] = await db.sql`
      select reason_code, occurrences from worker_quarantine where idempotency_key = ${envelope.idempotencyKey}
    `;
    expect(row).toEqual({ reason_code: longCode.slice(0, 100), occurrences: 2 });
    expect(seen.map((outcome) => [outcome.result, outcome.failureCode])).toEqual([
      ['TERMINAL_FAILURE', longCode.slice(0, 100)],
    ]);
  });

  it('reports a terminal message whose quarantine write fails, flagged quarantineFailed, and quarantines it once the write works', async () => {
    // Prepare: the database refuses quarantine rows of one key prefix (a trigger), while everything else works.
    await db.sql`
      create or replace function refuse_quarantine() returns trigger language plpgsql as $$
      begin raise exception 'quarantine refused by the test' using errcode = 'XX000'; end $$
    `;
    await db.sql`
      create or replace trigger refuse_quarantine before insert on worker_quarantine for each row
      when (new.idempotency_key like 'unquarantinable:%') execute function refuse_quarantine()
    `;
    const key = `unquarantinable:${randomUUID()}`;
    const body = JSON.stringify(envelopeFactory({ idempotencyKey: key, schemaVersion: 9 }));
    const good = payment();
    const seen: RecordOutcome[] = [];
    const observed = exampleWorker(db.sql, {
      commitMode,
      handlers,
      onOutcome: (outcome) => seen.push(outcome),
    });
    const record = sqsRecordFactory(body);

    // Act: refused, then the trigger gone and the message delivered again
    const refused = await observed(sqsEvent([record, sqsRecordFactory(good)]), lambdaContext());
    await db.sql`drop trigger refuse_quarantine on worker_quarantine`;
    const redelivered = await observed(
      sqsEvent([{ ...record, attributes: { ...record.attributes, ApproximateReceiveCount: '2' } }]),
      lambdaContext(),
    );

    // Assess: reported (never acknowledged without its quarantine row), counted, then quarantined
    expect(refused).toEqual({ batchItemFailures: [{ itemIdentifier: record.messageId }] });
    expect(seen[0]).toMatchObject({
      messageId: record.messageId,
      result: 'RETRYABLE_FAILURE',
      failureCode: 'UNSUPPORTED_SCHEMA_VERSION',
      quarantineFailed: true,
    });
    expect(seen[0]?.failureMessage).toContain('[quarantine failed: POSTGRES_XX000]');
    expect(await ledgerCount([paymentId(good)])).toBe(1);
    expect(redelivered).toEqual({ batchItemFailures: [] });
    expect(seen.at(-1)).toMatchObject({ result: 'TERMINAL_FAILURE', quarantined: true });
    expect(seen.at(-1)?.quarantineFailed).toBeUndefined();
    const rows = await db.sql`select reason_code from worker_quarantine where idempotency_key = ${key}`;
    expect(rows.map((row) => row.reason_code)).toEqual(['UNSUPPORTED_SCHEMA_VERSION']);
  });

  it('reports a hash mismatch whose quarantine write fails as IDEMPOTENCY_HASH_MISMATCH, flagged quarantineFailed, and quarantines it once the write works', async () => {
    // Prepare: a key applied once; the database then refuses quarantine rows of its prefix (a trigger).
    await db.sql`
      create or replace function refuse_mismatch_quarantine() returns trigger language plpgsql as $$
      begin raise exception 'quarantine refused by the test' using errcode = 'XX000'; end $$
    `;
    const key = `unquarantinable-mismatch:${randomUUID()}`;
    const original = { ...payment(), idempotencyKey: key };
    const seen: RecordOutcome[] = [];
    const observed = exampleWorker(db.sql, {
      commitMode,
      handlers,
      onOutcome: (outcome) => seen.push(outcome),
    });
    await observed(sqsEvent([sqsRecordFactory(original)]), lambdaContext());
    await db.sql`
      create or replace trigger refuse_mismatch_quarantine before insert on worker_quarantine for each row
      when (new.idempotency_key like 'unquarantinable-mismatch:%') execute function refuse_mismatch_quarantine()
    `;
    const conflicting = { ...payment(), idempotencyKey: key };
    const record = sqsRecordFactory(conflicting);
    const good = payment();

    // Act: refused (beside a good message), then the trigger gone and the message delivered again
    const refused = await observed(sqsEvent([record, sqsRecordFactory(good)]), lambdaContext());
    await db.sql`drop trigger refuse_mismatch_quarantine on worker_quarantine`;
    const redelivered = await observed(sqsEvent([withReceiveCount(record, 2)]), lambdaContext());

    // Assess: reported with the gate's decision (never acknowledged without its quarantine row), then quarantined
    expect(refused).toEqual({ batchItemFailures: [{ itemIdentifier: record.messageId }] });
    expect(seen[1]).toMatchObject({
      messageId: record.messageId,
      result: 'RETRYABLE_FAILURE',
      failureCode: 'IDEMPOTENCY_HASH_MISMATCH',
      quarantineFailed: true,
    });
    expect(seen[1]?.failureMessage).toContain('[quarantine failed: POSTGRES_XX000]');
    expect(redelivered).toEqual({ batchItemFailures: [] });
    expect(seen.at(-1)).toMatchObject({ result: 'TERMINAL_FAILURE', quarantined: true, hashMismatch: true });
    expect(await ledgerCount([paymentId(original), paymentId(conflicting)])).toBe(1);
    expect(await ledgerCount([paymentId(good)])).toBe(1);
    expect(await inboxRow(key)).toMatchObject({ status: 'COMPLETED' });
    const rows = await db.sql`select reason_code from worker_quarantine where idempotency_key = ${key}`;
    expect(rows.map((row) => row.reason_code)).toEqual(['IDEMPOTENCY_HASH_MISMATCH']);
  });

  it('reports a retryable failure twice and makes it terminal on the third attempt (maxBusinessAttempts 3)', async () => {
    // Prepare
    const envelope = envelopeFactory({
      messageType: 'AlwaysRetryable',
      idempotencyKey: `flaky:${randomUUID()}`,
      attemptPolicy: { maxBusinessAttempts: 3 },
      payload: { note: 'n' },
    });
    const record = sqsRecordFactory(envelope);

    // Act
    const responses = [];
    const rows = [];
    for (const attempt of [1, 2, 3]) {
      responses.push(
        await worker(
          sqsEvent([withReceiveCount(record, attempt), sqsRecordFactory(payment())]),
          lambdaContext(),
        ),
      );
      rows.push(await inboxRow(envelope.idempotencyKey));
    }

    // Assess
    expect(responses).toEqual([
      { batchItemFailures: [{ itemIdentifier: record.messageId }] },
      { batchItemFailures: [{ itemIdentifier: record.messageId }] },
      { batchItemFailures: [] },
    ]);
    expect(rows.map((row) => [row?.status, row?.receive_count, row?.failure_code])).toEqual([
      ['FAILED_RETRYABLE', 1, 'DOWNSTREAM_UNAVAILABLE'],
      ['FAILED_RETRYABLE', 2, 'DOWNSTREAM_UNAVAILABLE'],
      ['FAILED_TERMINAL', 3, 'DOWNSTREAM_UNAVAILABLE'],
    ]);
    expect(rows[2]?.failure_message).toContain('attempt 3 of maxBusinessAttempts 3');
    const quarantine =
      await db.sql`select reason_code from worker_quarantine where idempotency_key = ${envelope.idempotencyKey}`;
    expect(quarantine).toEqual([{ reason_code: 'DOWNSTREAM_UNAVAILABLE' }]);
  });

  it('freezes a key that is not yet COMPLETED when another payload reuses it: the row becomes FAILED_TERMINAL with the first hash, and neither message runs again', async () => {
    // Prepare: message A fails retryably (row FAILED_RETRYABLE); message B reuses A's key with another payload.
    const key = `reused:${randomUUID()}`;
    const a = envelopeFactory({
      messageType: 'AlwaysRetryable',
      idempotencyKey: key,
      payload: { note: 'a' },
    });
    const b = { ...a, messageId: `msg_${randomUUID()}`, payload: { note: 'b' } };
    const recordA = sqsRecordFactory(a);
    const recordB = sqsRecordFactory(b);
    await worker(sqsEvent([recordA, sqsRecordFactory(payment())]), lambdaContext());
    const hashOfA = (await inboxRow(key))?.request_hash;

    // Act
    const mismatch = await worker(sqsEvent([recordB, sqsRecordFactory(payment())]), lambdaContext());
    const redeliveryOfA = await worker(
      sqsEvent([withReceiveCount(recordA, 2), sqsRecordFactory(payment())]),
      lambdaContext(),
    );

    // Assess: B quarantined as a mismatch; the row keeps A's hash, now FAILED_TERMINAL; A acknowledged without a run.
    expect(mismatch).toEqual({ batchItemFailures: [] });
    expect(redeliveryOfA).toEqual({ batchItemFailures: [] });
    expect(await inboxRow(key)).toMatchObject({
      status: 'FAILED_TERMINAL',
      failure_code: 'IDEMPOTENCY_HASH_MISMATCH',
      request_hash: hashOfA,
    });
    const quarantined = await db.sql`
      select sqs_message_id, reason_code from worker_quarantine where idempotency_key = ${key} order by first_quarantined_at
    `;
    expect(quarantined).toEqual([
      { sqs_message_id: recordB.messageId, reason_code: 'IDEMPOTENCY_HASH_MISMATCH' },
      { sqs_message_id: recordA.messageId, reason_code: 'IDEMPOTENCY_HASH_MISMATCH' },
    ]);
  });

  it('turns a retryable failure terminal when its code is in terminalAfterCodes or retryableUntil has passed', async () => {
    // Prepare
    const listed = envelopeFactory({
      messageType: 'AlwaysRetryable',
      idempotencyKey: `listed:${randomUUID()}`,
      attemptPolicy: { terminalAfterCodes: ['DOWNSTREAM_UNAVAILABLE'] },
      payload: {},
    });
    const expired = envelopeFactory({
      messageType: 'AlwaysRetryable',
      idempotencyKey: `expired:${randomUUID()}`,
      attemptPolicy: { retryableUntil: '2020-01-01T00:00:00Z' },
      payload: {},
    });

    // Act
    const response = await worker(
      sqsEvent([sqsRecordFactory(listed), sqsRecordFactory(expired)]),
      lambdaContext(),
    );

    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect((await inboxRow(listed.idempotencyKey))?.failure_message).toContain('terminalAfterCodes');
    expect((await inboxRow(expired.idempotencyKey))?.failure_message).toContain('retryableUntil');
    expect((await inboxRow(expired.idempotencyKey))?.status).toBe('FAILED_TERMINAL');
  });

  it('reports a message whose notBefore is in the future, touching nothing', async () => {
    // Prepare: between two due messages, so that per-batch mode claims a batch and must leave it out.
    const envelope = payment();
    envelope.attemptPolicy = { notBefore: new Date(Date.now() + 3_600_000).toISOString() };
    const record = sqsRecordFactory(envelope);
    const due = [payment(), payment()];

    // Act
    const response = await worker(
      sqsEvent([sqsRecordFactory(due[0]), record, sqsRecordFactory(due[1])]),
      lambdaContext(),
    );

    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: record.messageId }] });
    expect(await inboxRow(envelope.idempotencyKey)).toBeUndefined();
    expect(await ledgerCount([paymentId(envelope)])).toBe(0);
    expect(await ledgerCount(due.map(paymentId))).toBe(2);
  });

  it('reports a record retryable while another connection holds its case row lock, and completes it after release', async () => {
    // Prepare
    const caseId = `CASE-${randomUUID()}`;
    await db.sql`insert into cases (case_id, stage, version) values (${caseId}, 'INVESTIGATION', 1)`;
    const envelope = envelopeFactory({
      messageType: 'CaseDeadlineCalculationRequested',
      idempotencyKey: `deadline:${caseId}`,
      payload: { caseId, stage: 'INVESTIGATION', effectiveAt: '2026-07-06T10:15:00Z' },
    });
    const record = sqsRecordFactory(envelope);
    // The role's lock_timeout (5 s in tests, as deployed), lowered to 200 ms for this client alone.
    const fastLock = exampleWorker(db.client({ connection: { lock_timeout: 200 } }), {
      commitMode,
      handlers,
    });
    const release = await holdCaseLock(db.client({ max: 1 }), caseId);

    // Act
    const whileLocked = await fastLock(sqsEvent([record, sqsRecordFactory(payment())]), lambdaContext());
    const rowWhileLocked = await inboxRow(envelope.idempotencyKey);
    await release();
    const afterRelease = await fastLock(sqsEvent([withReceiveCount(record, 2)]), lambdaContext());

    // Assess
    expect(whileLocked).toEqual({ batchItemFailures: [{ itemIdentifier: record.messageId }] });
    expect(rowWhileLocked).toMatchObject({
      status: 'FAILED_RETRYABLE',
      failure_code: 'LOCK_TIMEOUT',
      receive_count: 1,
    });
    expect(afterRelease).toEqual({ batchItemFailures: [] });
    expect(await inboxRow(envelope.idempotencyKey)).toMatchObject({
      status: 'COMPLETED',
      receive_count: 2,
    });
    expect(await db.sql`select deadline_version from cases where case_id = ${caseId}`).toEqual([
      { deadline_version: 1 },
    ]);
  });

  it('retries a delivery whose key another transaction is processing at once, without waiting for any lock timeout', async () => {
    // Prepare: a first delivery left the key FAILED_RETRYABLE; another copy is now in flight (the engine's own
    // claim, in a transaction that has not ended).
    const envelope = envelopeFactory({
      messageType: 'AlwaysRetryable',
      idempotencyKey: `held:${randomUUID()}`,
      payload: {},
    });
    const record = sqsRecordFactory(envelope);
    await worker(sqsEvent([record, sqsRecordFactory(payment())]), lambdaContext());
    const { release, holding } = await holdInFlight(db.client({ max: 1 }), async (tx) => {
      await claimInbox(tx, {
        consumer: 'case-worker',
        envelope: envelope as never,
        requestHash: requestHash(envelope as never),
        sqsMessageId: 'in-flight-copy',
      });
    });
    // Lock waits far longer than the test: a claim that waited for the copy in flight would time the test out.
    const seen: RecordOutcome[] = [];
    const logged = exampleWorker(db.client({ connection: { lock_timeout: 30_000 } }), {
      commitMode,
      handlers,
      onOutcome: (outcome) => seen.push(outcome),
    });

    // Act
    const started = Date.now();
    const response = await logged(
      sqsEvent([withReceiveCount(record, 2), sqsRecordFactory(payment())]),
      lambdaContext(),
    );
    const tookMs = Date.now() - started;
    const rowWhileHeld = await db.sql`
      select receive_count from worker_inbox where idempotency_key = ${envelope.idempotencyKey}
    `;
    release();
    await holding;

    // Assess: reported retryable as IN_PROGRESS_ELSEWHERE at once; no bookkeeping touched the row.
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(seen.find((outcome) => outcome.messageId === record.messageId)).toMatchObject({
      result: 'RETRYABLE_FAILURE',
      failureCode: 'IN_PROGRESS_ELSEWHERE',
    });
    expect(tookMs).toBeLessThan(5000);
    expect(rowWhileHeld).toEqual([{ receive_count: 1 }]);
  });

  it('retries a delivery whose inbox row another writer holds (an ops command) after the role lock timeout', async () => {
    // Prepare: a first delivery left the key FAILED_RETRYABLE; a transaction outside the engine locks its row.
    const envelope = envelopeFactory({
      messageType: 'AlwaysRetryable',
      idempotencyKey: `locked:${randomUUID()}`,
      payload: {},
    });
    const record = sqsRecordFactory(envelope);
    await worker(sqsEvent([record, sqsRecordFactory(payment())]), lambdaContext());
    const { release, holding } = await holdInFlight(db.client({ max: 1 }), async (tx) => {
      await tx`select 1 from worker_inbox where idempotency_key = ${envelope.idempotencyKey} for update`;
    });
    const seen: RecordOutcome[] = [];
    const logged = exampleWorker(db.client({ connection: { lock_timeout: 200 } }), {
      commitMode,
      handlers,
      onOutcome: (outcome) => seen.push(outcome),
    });

    // Act
    const response = await logged(
      sqsEvent([withReceiveCount(record, 2), sqsRecordFactory(payment())]),
      lambdaContext(),
    );
    release();
    await holding;

    // Assess
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(seen.find((outcome) => outcome.messageId === record.messageId)).toMatchObject({
      result: 'RETRYABLE_FAILURE',
      failureCode: 'IN_PROGRESS_ELSEWHERE',
    });
    expect(await inboxRow(envelope.idempotencyKey)).toMatchObject({ receive_count: 1 });
  });

  it('reports every record and fails the invocation when the database is unreachable, with one connection attempt; the same messages complete once it is back', async () => {
    // Prepare
    const { proxy, sql, close } = await proxiedClient(db.url);
    const flaky = exampleWorker(sql, { commitMode, handlers });
    const envelopes = Array.from({ length: 5 }, payment);
    const records = envelopes.map((envelope) => sqsRecordFactory(envelope));
    proxy.down();
    proxy.resetCount();

    // Act
    const failure = await flaky(sqsEvent(records), lambdaContext()).catch((error: unknown) => error);
    const attempts = proxy.connections;
    proxy.up();
    const recovered = await flaky(
      sqsEvent(records.map((record) => withReceiveCount(record, 2))),
      lambdaContext(),
    );
    await close();

    // Assess
    expect(failure).toBeInstanceOf(BatchFailedError);
    expect((failure as BatchFailedError).messageIds).toEqual(records.map((record) => record.messageId));
    expect(attempts).toBe(1);
    expect(recovered).toEqual({ batchItemFailures: [] });
    expect(await ledgerCount(envelopes.map(paymentId))).toBe(5);
  });

  it('reports every record before the Lambda timeout when the database stops answering mid-batch', async () => {
    // Prepare: a connection that works, then a server that neither answers nor closes (a hung host).
    const { proxy, sql, close } = await proxiedClient(db.url, { connectTimeoutSeconds: 30 });
    const hung = exampleWorker(sql, { commitMode, handlers, deadlineGuardMs: 500 });
    await hung(sqsEvent([sqsRecordFactory(payment())]), lambdaContext());
    const records = Array.from({ length: 3 }, () => sqsRecordFactory(payment()));
    proxy.stall();
    const context = lambdaContext(3000);

    // Act
    const failure = await hung(sqsEvent(records), context).catch((error: unknown) => error);
    const leftWhenReturned = context.getRemainingTimeInMillis();
    await close();

    // Assess: the invocation ended on its own, before its timeout, with every record reported (per-batch:
    // the batch transaction as a whole timed out).
    expect(failure).toBeInstanceOf(BatchFailedError);
    expect((failure as BatchFailedError).messageIds).toEqual(records.map((record) => record.messageId));
    expect((failure as Error).message).toContain(
      commitMode === 'per-batch' ? 'BATCH_COMMIT_FAILED' : 'DATABASE_TIMEOUT',
    );
    expect(leftWhenReturned).toBeGreaterThan(0);
  });

  it('cancels a domain statement that runs past the statement timeout and reports it retryable', async () => {
    // Prepare: a handler that sleeps 5 s in the database, under a 300 ms statement timeout.
    const id = `SLOW-${randomUUID()}`;
    const record = sqsRecordFactory(
      envelopeFactory({
        messageType: 'SlowLedgerWrite',
        idempotencyKey: id,
        payload: { paymentId: id, sleepMs: 5000 },
      }),
    );
    // The role's statement_timeout (15 s in tests, as deployed), lowered to 300 ms for this client alone.
    const bounded = exampleWorker(db.client({ connection: { statement_timeout: 300 } }), {
      commitMode,
      handlers,
    });

    // Act
    const response = await bounded(sqsEvent([record, sqsRecordFactory(payment())]), lambdaContext());

    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: record.messageId }] });
    expect(await inboxRow(id)).toMatchObject({ status: 'FAILED_RETRYABLE', failure_code: 'QUERY_CANCELED' });
    expect(await ledgerCount([id])).toBe(0);
  });

  it('stops starting records when the Lambda timeout is near: started ones commit, unstarted ones are reported', async () => {
    // Prepare: 10 records that each take 10 s of the invocation's time, on a Lambda clock the records move (the
    // test's, so the outcome does not depend on how busy the machine is); 31 s left and a 5 s guard. A record starts
    // while its handler would still get the guard: with 31 s less 500 ms to settle it (per batch 500 ms more, kept
    // for the COMMIT), the first three start and the fourth finds about 0.5 s (per batch 0 s).
    let spentMs = 0;
    const clock = () => Date.now() + spentMs;
    const spendTime = defineHandler({
      messageType: 'SpendLambdaTime',
      schemaVersion: 1,
      payload: z.object({ paymentId: z.string(), ms: z.number().int() }),
      async handle({ sql, payload }) {
        await sql`
          insert into ledger_entries (entry_id, account_id, amount, currency, source_event_id)
          values (${payload.paymentId}, 'ACC-TIME', 1, 'EUR', ${payload.paymentId})
        `;
        spentMs += payload.ms;
        return { resultRef: `ledger_entries/${payload.paymentId}` };
      },
    });
    const envelopes = Array.from({ length: 10 }, () => {
      const id = `TIME-${randomUUID()}`;
      return envelopeFactory({
        messageType: 'SpendLambdaTime',
        idempotencyKey: id,
        payload: { paymentId: id, ms: 10_000 },
      });
    });
    const records = envelopes.map((envelope) => sqsRecordFactory(envelope));
    const outcomes: RecordOutcome[] = [];
    const guarded = exampleWorker(db.sql, {
      commitMode,
      handlers: [...handlers, spendTime],
      deadlineGuardMs: 5000,
      onOutcome: (outcome) => outcomes.push(outcome),
    });
    const context = localLambdaContext({ functionName: 'case-worker', timeoutMs: 31_000, now: clock });

    // Act
    const response = await guarded(sqsEvent(records), context);

    // Assess: the first three committed, the other seven reported unstarted, in order, leaving no inbox row.
    expect(outcomes.map((outcome) => outcome.result)).toEqual([
      ...Array<string>(3).fill('COMPLETED'),
      ...Array<string>(7).fill('DEADLINE_DEFERRED'),
    ]);
    expect(response.batchItemFailures.map((failure) => failure.itemIdentifier)).toEqual(
      records.slice(3).map((record) => record.messageId),
    );
    const committed = await db.sql`
      select source_event_id from ledger_entries where source_event_id in ${db.sql(envelopes.map(paymentId))}
    `;
    expect(new Set(committed.map((row) => row.source_event_id))).toEqual(
      new Set(envelopes.slice(0, 3).map(paymentId)),
    );
    const deferredRows = await db.sql`
      select status from worker_inbox
      where idempotency_key in ${db.sql(envelopes.slice(3).map((envelope) => envelope.idempotencyKey))}
    `;
    expect(deferredRows).toEqual([]);
  });

  it('leaves the inbox as it was for records it never started, new keys and known ones alike', async () => {
    // Prepare: one key already known (a first delivery failed retryably), one new key; a guard longer than the
    // time left, so no record starts.
    const known = envelopeFactory({
      messageType: 'AlwaysRetryable',
      idempotencyKey: `known:${randomUUID()}`,
      payload: {},
    });
    await worker(sqsEvent([sqsRecordFactory(known), sqsRecordFactory(payment())]), lambdaContext());
    const fresh = payment();
    const idle = exampleWorker(db.sql, { commitMode, handlers, deadlineGuardMs: 60_000 });

    // Act
    const failure = await idle(
      sqsEvent([withReceiveCount(sqsRecordFactory(known), 2), sqsRecordFactory(fresh)]),
      lambdaContext(),
    ).catch((error: unknown) => error);

    // Assess
    expect((failure as Error).message).toContain('DEADLINE_DEFERRED');
    expect(await inboxRow(known.idempotencyKey)).toMatchObject({
      status: 'FAILED_RETRYABLE',
      receive_count: 1,
    });
    expect(await inboxRow(fresh.idempotencyKey)).toBeUndefined();
  });

  it('guards at least 2 s by default: with 1.5 s left nothing starts and the invocation fails', async () => {
    // Prepare
    const envelope = payment();

    // Act
    const failure = await worker(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext(1500)).catch(
      (error: unknown) => error,
    );

    // Assess
    expect(failure).toBeInstanceOf(BatchFailedError);
    expect((failure as Error).message).toContain('DEADLINE_DEFERRED');
    expect(await inboxRow(envelope.idempotencyKey)).toBeUndefined();
  });

  it('FIFO: reports a group from its first failure on and processes the other groups', async () => {
    // Prepare: group A (a1, a2 fails, a3) and group B (b1, b2) on a .fifo queue.
    const fifoArn = 'arn:aws:sqs:us-east-1:000000000000:case-worker.fifo';
    const fifoRecord = (envelope: Envelope, group: string) => {
      const record = sqsRecordFactory(envelope, { eventSourceARN: fifoArn });
      return {
        ...record,
        attributes: { ...record.attributes, MessageGroupId: group, MessageDeduplicationId: randomUUID() },
      };
    };
    const [a1, a3, b1, b2] = [payment(), payment(), payment(), payment()];
    const a2 = envelopeFactory({
      messageType: 'AlwaysRetryable',
      idempotencyKey: `a2:${randomUUID()}`,
      payload: {},
    });
    const records = [
      fifoRecord(a1, 'A'),
      fifoRecord(b1, 'B'),
      fifoRecord(a2, 'A'),
      fifoRecord(b2, 'B'),
      fifoRecord(a3, 'A'),
    ];

    const seen: RecordOutcome[] = [];
    const logged = exampleWorker(db.sql, {
      commitMode,
      handlers,
      onOutcome: (outcome) => seen.push(outcome),
    });

    // Act
    const response = await logged(sqsEvent(records), lambdaContext());

    // Assess
    const lineOf = (index: number) => seen.find((outcome) => outcome.messageId === records[index]?.messageId);
    expect(lineOf(2)).toMatchObject({ result: 'RETRYABLE_FAILURE', failureCode: 'DOWNSTREAM_UNAVAILABLE' });
    // a3 did not run; it keeps group A blocked exactly as long as a2 (same visibility), so A comes back in order.
    expect(lineOf(4)).toMatchObject({ result: 'RETRYABLE_FAILURE', failureCode: 'FIFO_GROUP_BLOCKED' });
    expect(lineOf(4)?.visibilitySeconds).toBe(lineOf(2)?.visibilitySeconds);
    expect(response.batchItemFailures.map((failure) => failure.itemIdentifier).sort()).toEqual(
      [records[2]?.messageId, records[4]?.messageId].sort(),
    );
    expect(await ledgerCount([a1, b1, b2].map((e) => paymentId(e)))).toBe(3);
    expect(await ledgerCount([paymentId(a3)])).toBe(0);
  });
});

describe('Function: processRecord() with a failing handler', () => {
  it('classifies a constraint violation from a handler as terminal and keeps no partial write', async () => {
    // Prepare: a handler that writes a ledger row, then violates a constraint in the same transaction.
    const broken = defineHandler({
      messageType: 'BrokenWrite',
      schemaVersion: 1,
      payload: z.object({ id: z.string() }),
      async handle({ sql, payload }) {
        await sql`insert into ledger_entries (entry_id, account_id, amount, currency, source_event_id)
                  values (${payload.id}, 'A', 1, 'EUR', ${payload.id})`;
        await sql`insert into cases (case_id, stage, version) values (${payload.id}, 'X', null)`;
        return {};
      },
    });
    const worker = exampleWorker(db.sql, { handlers: [...handlers, broken] });
    const id = `BROKEN-${randomUUID()}`;
    const envelope = envelopeFactory({ messageType: 'BrokenWrite', idempotencyKey: id, payload: { id } });

    // Act
    const response = await worker(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext());

    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect(await ledgerCount([id])).toBe(0);
    const row = await inboxRow(id);
    expect(row).toMatchObject({ status: 'FAILED_TERMINAL', failure_code: 'CONSTRAINT_VIOLATION' });
    expect(row?.failure_message).toBe(
      'PostgreSQL 23502 integrity constraint violation (table cases, column version)',
    );
  });

  it('never acknowledges a terminal message whose quarantine row cannot be written', async () => {
    // Prepare: a handler that fails terminally, on a connection that dies right after (bookkeeping cannot run).
    const { proxy, sql, close } = await proxiedClient(db.url);
    const dying = defineHandler({
      messageType: 'DyingTerminal',
      schemaVersion: 1,
      payload: z.object({}),
      async handle() {
        proxy.down();
        throw new TerminalError('BAD_DATA', 'bad data');
      },
    });
    const worker = exampleWorker(sql, { handlers: [...handlers, dying] });
    const record = sqsRecordFactory(
      envelopeFactory({ messageType: 'DyingTerminal', idempotencyKey: `dying:${randomUUID()}`, payload: {} }),
    );

    // Act
    const result = await worker(sqsEvent([record]), lambdaContext()).catch((error: unknown) => error);
    await close();

    // Assess: the record is reported (the whole batch failed, so the invocation throws); nothing is lost.
    expect(result).toBeInstanceOf(BatchFailedError);
    expect(
      await db.sql`select * from worker_quarantine where sqs_message_id = ${record.messageId}`,
    ).toHaveLength(0);
  });
});
