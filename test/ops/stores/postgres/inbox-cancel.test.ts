import { describe, expect, it } from 'vitest';
import { paymentCaptured } from '../../../../lambda/domain/index.ts';
import { claimBatch } from '../../../../lambda/stores/postgres/batch-claims.ts';
import { requestHash } from '../../../../lambda/worker/request-hash.ts';
import { OperationError } from '../../../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../../../tools/ops/memory-output.ts';
import { inboxCancel } from '../../../../tools/ops/stores/postgres/inbox-cancel.ts';
import { createTestDatabase } from '../../../support/database.ts';
import { gatedHandler } from '../../../support/gated-handler.ts';
import { lambdaContext, sqsEvent, sqsRecordFactory } from '../../../support/sqs-event.ts';
import { exampleWorker } from '../../../support/test-worker.ts';
import { waitFor } from '../../../support/wait-for.ts';
import { paymentEnvelope, seedInbox } from '../../ops-fixture.ts';

const db = await createTestDatabase();
const consumer = 'case-worker';

const gatedPayment = () => gatedHandler(paymentCaptured);

const ledgerRows = async (paymentId: string) =>
  (await db.sql`select count(*)::int as n from ledger_entries where source_event_id = ${paymentId}`)[0]?.n;
const inboxRow = async (key: string) =>
  (
    await db.sql`select status, failure_code from worker_inbox where consumer = ${consumer} and idempotency_key = ${key}`
  )[0];
const quarantineRows = async (key: string) =>
  db.sql`select reason_code, occurrences from worker_quarantine where consumer = ${consumer} and idempotency_key = ${key}`;

describe('Command: inbox cancel (PostgreSQL)', () => {
  it.each([
    { delivery: 'a first delivery (the claim inserted the row COMPLETED)', index: 1, redelivery: false },
    {
      delivery: 'a redelivery after a failed attempt (the claim locked the row)',
      index: 5,
      redelivery: true,
    },
  ])(
    'stops a copy in flight at its commit, $delivery: nothing applied, the copy quarantined',
    async ({ index, redelivery }) => {
      // Prepare: a copy claimed, its handler held.
      const envelope = paymentEnvelope(index);
      const paymentId = (envelope.payload as { paymentId: string }).paymentId;
      if (redelivery)
        await seedInbox(db.sql, envelope, {
          status: 'FAILED_RETRYABLE',
          failureCode: 'DOWNSTREAM_UNAVAILABLE',
        });
      const gated = gatedPayment();
      const worker = exampleWorker(db.sql, { handlers: [gated.handler] });
      const inFlight = worker(sqsEvent([sqsRecordFactory(JSON.stringify(envelope))]), lambdaContext());
      await waitFor('the handler to start', gated.entered, 10_000);

      // Act: cancel while it runs (the cancel waits for the copy's inbox lock once its marker is committed), then let
      // the handler finish.
      const cancelling = inboxCancel(
        { sql: db.sql, out: createMemoryOutput() },
        {
          consumer,
          idempotencyKey: envelope.idempotencyKey,
          reason: 'customer refunded',
          actor: 'test-operator',
        },
      );
      await waitFor(
        'the cancel marker',
        async () =>
          (
            await db.sql`select 1 from worker_cancelled_keys where idempotency_key = ${envelope.idempotencyKey}`
          ).length === 1,
        10_000,
      );
      gated.release();
      const response = await inFlight;
      const cancelled = await cancelling;

      // Assess: not applied, acknowledged as quarantined (CANCELLED), the row CANCELLED, the audit row written.
      expect(response).toEqual({ batchItemFailures: [] });
      expect(await ledgerRows(paymentId)).toBe(0);
      // A first delivery's row went with its rollback: the failure bookkeeping writes it CANCELLED unless the cancel held
      // the key's lock just then (the marker refuses every later copy either way). A redelivery's row stays, CANCELLED.
      const row = await inboxRow(envelope.idempotencyKey);
      if (redelivery || row) expect(row).toEqual({ status: 'CANCELLED', failure_code: 'CANCELLED' });
      expect(await quarantineRows(envelope.idempotencyKey)).toEqual([
        { reason_code: 'CANCELLED', occurrences: 1 },
      ]);
      expect(cancelled).toMatchObject({
        inboxStatusBefore: redelivery ? 'FAILED_RETRYABLE' : null,
        alreadyCancelled: false,
        reason: 'customer refunded',
      });
      const [audit] = await db.sql`
      select action, outcome, actor, detail from ops_audit where audit_id = ${cancelled.auditId}
    `;
      expect(audit).toMatchObject({
        action: 'inbox_cancel',
        outcome: 'DONE',
        actor: 'test-operator',
        detail: { reason: 'customer refunded', completedWhileCancelling: false },
      });

      // Act: a later copy of the key.
      const later = await worker(sqsEvent([sqsRecordFactory(JSON.stringify(envelope))]), lambdaContext());

      // Assess: quarantined again at the claim, never applied.
      expect(later).toEqual({ batchItemFailures: [] });
      expect(await ledgerRows(paymentId)).toBe(0);
      expect(await quarantineRows(envelope.idempotencyKey)).toEqual([
        { reason_code: 'CANCELLED', occurrences: 2 },
      ]);
    },
  );

  it('cancels a key that failed before, and refuses its next copy at the claim (per-batch mode too)', async () => {
    // Prepare: a key with a FAILED_RETRYABLE row, and another one never seen.
    const failed = paymentEnvelope(2);
    const unknown = paymentEnvelope(3);
    await db.sql`
      insert into worker_inbox (consumer, idempotency_key, message_type, schema_version, aggregate_type, aggregate_id,
        status, request_hash, receive_count)
      values (${consumer}, ${failed.idempotencyKey}, 'PaymentCaptured', 1, ${failed.aggregateType}, ${failed.aggregateId},
        'FAILED_RETRYABLE', ${'0'.repeat(64)}, 2)
    `;

    // Act
    const first = await inboxCancel(
      { sql: db.sql, out: createMemoryOutput() },
      { consumer, idempotencyKey: failed.idempotencyKey },
    );
    const second = await inboxCancel(
      { sql: db.sql, out: createMemoryOutput() },
      { consumer, idempotencyKey: unknown.idempotencyKey },
    );
    // The batch claim itself (without a savepoint a failed statement throws) claims both CANCELLED.
    const claimed = await db.sql
      .begin(async (tx) => {
        const entries = [failed, unknown].map((envelope, i) => ({
          consumer,
          envelope,
          requestHash: requestHash(envelope),
          sqsMessageId: `m-${i}`,
        }));
        const claims = await claimBatch(tx, entries, { savepoint: false });
        const statuses = [claims?.take('m-0')?.status, claims?.take('m-1')?.status];
        throw Object.assign(new Error('roll back'), { statuses });
      })
      .catch((error: { statuses?: unknown }) => error.statuses);
    expect(claimed).toEqual(['CANCELLED', 'CANCELLED']);
    const worker = exampleWorker(db.sql, { commitMode: 'per-batch' });
    const response = await worker(
      sqsEvent([sqsRecordFactory(JSON.stringify(failed)), sqsRecordFactory(JSON.stringify(unknown))]),
      lambdaContext(),
    );

    // Assess
    expect(first.inboxStatusBefore).toBe('FAILED_RETRYABLE');
    expect(second.inboxStatusBefore).toBeNull();
    expect(response).toEqual({ batchItemFailures: [] });
    for (const envelope of [failed, unknown]) {
      expect(await ledgerRows((envelope.payload as { paymentId: string }).paymentId)).toBe(0);
      expect((await inboxRow(envelope.idempotencyKey))?.status).toBe('CANCELLED');
      expect(await quarantineRows(envelope.idempotencyKey)).toEqual([
        { reason_code: 'CANCELLED', occurrences: 1 },
      ]);
      // The refused copy is an attempt of the key's history, on a new row and on the row that failed before.
      const [history] = await db.sql<{ attempts: { outcome: string; code: string }[] }[]>`
        select attempt_history as attempts from worker_inbox
        where consumer = ${consumer} and idempotency_key = ${envelope.idempotencyKey}
      `;
      expect(history?.attempts.at(-1)).toMatchObject({ outcome: 'CANCELLED', code: 'CANCELLED' });
    }
  });

  it('refuses to cancel a COMPLETED key, naming what to do instead', async () => {
    // Prepare
    const envelope = paymentEnvelope(4);
    await exampleWorker(db.sql)(sqsEvent([sqsRecordFactory(JSON.stringify(envelope))]), lambdaContext());
    expect((await inboxRow(envelope.idempotencyKey))?.status).toBe('COMPLETED');

    // Act
    const cancel = inboxCancel(
      { sql: db.sql, out: createMemoryOutput() },
      { consumer, idempotencyKey: envelope.idempotencyKey },
    );

    // Assess
    await expect(cancel).rejects.toThrow(OperationError);
    await expect(cancel).rejects.toThrow(/is COMPLETED.*compensating message/);
    expect((await inboxRow(envelope.idempotencyKey))?.status).toBe('COMPLETED');
    expect(
      await db.sql`select 1 from worker_cancelled_keys where idempotency_key = ${envelope.idempotencyKey}`,
    ).toHaveLength(0);
  });
});
