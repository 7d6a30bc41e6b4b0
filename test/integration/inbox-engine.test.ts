import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTestDatabase } from '../support/database.ts';
import { envelopeFactory, lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';
import { exampleWorker } from '../support/test-worker.ts';

const db = await createTestDatabase();

const payment = (overrides: Record<string, unknown> = {}) => {
  const paymentId = `PAY-${randomUUID()}`;
  return envelopeFactory({
    idempotencyKey: `payment:${paymentId}:captured`,
    aggregateId: paymentId,
    payload: { paymentId, accountId: 'ACC-1', amount: '10.50', currency: 'EUR' },
    ...overrides,
  });
};
const stageChanged = (caseId: string, version: number, stage = 'INVESTIGATION') =>
  envelopeFactory({
    messageType: 'CaseStageChanged',
    idempotencyKey: `case:${caseId}:stage:v${version}`,
    aggregateType: 'case',
    aggregateId: caseId,
    payload: { caseId, stage, version },
  });
const deadlineRequested = (
  caseId: string,
  key: string,
  effectiveAt = '2026-07-06T10:15:00Z',
  stage = 'INVESTIGATION',
) =>
  envelopeFactory({
    messageType: 'CaseDeadlineCalculationRequested',
    idempotencyKey: key,
    aggregateType: 'case',
    aggregateId: caseId,
    payload: { caseId, stage, effectiveAt },
  });

const inboxRow = async (key: string) =>
  (await db.sql`select * from worker_inbox where consumer = 'case-worker' and idempotency_key = ${key}`)[0];
const ledgerCount = async (paymentId: string) =>
  Number((await db.sql`select count(*) from ledger_entries where source_event_id = ${paymentId}`)[0]?.count);

describe.each(['per-message', 'per-batch'] as const)(
  'Function: createWorker() handler, commitMode %s',
  (commitMode) => {
    const worker = exampleWorker(db.sql, { commitMode });

    it('applies the same message once when it arrives three times, twice as the same SQS message and once as a new one', async () => {
      // Prepare
      const envelope = payment();
      const first = sqsRecordFactory(envelope);
      const sameAgain = {
        ...first,
        receiptHandle: 'rh-2',
        attributes: { ...first.attributes, ApproximateReceiveCount: '2' },
      };
      const newSqsMessage = sqsRecordFactory(envelope);

      // Act
      const responses = [
        await worker(sqsEvent([first]), lambdaContext()),
        await worker(sqsEvent([sameAgain]), lambdaContext()),
        await worker(sqsEvent([newSqsMessage]), lambdaContext()),
      ];

      // Assess
      expect(responses).toEqual([
        { batchItemFailures: [] },
        { batchItemFailures: [] },
        { batchItemFailures: [] },
      ]);
      expect(await ledgerCount((envelope.payload as { paymentId: string }).paymentId)).toBe(1);
      const row = await inboxRow(envelope.idempotencyKey);
      expect(row).toMatchObject({
        status: 'COMPLETED',
        receive_count: 3,
        last_message_id: newSqsMessage.messageId,
      });
      expect(row?.result_ref).toMatch(/^ledger_entries\/ledger-PAY-/);
      expect(row?.request_hash).toMatch(/^[0-9a-f]{64}$/);
    });

    it('applies one effect per round when two invocations race the same key on two connections (50 rounds)', async () => {
      // Prepare: two workers, each with its own single-connection pool, as two Lambda environments would be.
      const a = exampleWorker(db.client({ max: 1 }), { commitMode });
      const b = exampleWorker(db.client({ max: 1 }), { commitMode });
      const envelopes = Array.from({ length: 50 }, () => payment());

      // Act
      const rounds = await Promise.all(
        envelopes.map(async (envelope) => {
          const [ra, rb] = await Promise.all([
            a(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext()),
            b(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext()),
          ]);
          return [ra, rb];
        }),
      );

      // Assess: nobody failed (a loser either came after the commit and saw COMPLETED, or met the winner in flight
      // and was told at once to retry later, without failing its invocation),
      // and each key has exactly one ledger row and a COMPLETED inbox row.
      const failures = rounds.flat().flatMap((response) => response.batchItemFailures);
      const ids = envelopes.map((envelope) => (envelope.payload as { paymentId: string }).paymentId);
      const counts = await db.sql`
      select source_event_id, count(*)::int as n from ledger_entries where source_event_id in ${db.sql(ids)} group by 1
    `;
      expect(counts).toHaveLength(50);
      expect(counts.every((row) => row.n === 1)).toBe(true);
      const statuses = await db.sql`
      select status, count(*)::int as n from worker_inbox
      where idempotency_key in ${db.sql(envelopes.map((e) => e.idempotencyKey))} group by 1
    `;
      expect(statuses).toEqual([{ status: 'COMPLETED', n: 50 }]);
      // A loser that met the winner in flight is reported retryable, never failed terminally.
      expect(failures.length).toBeLessThanOrEqual(50);
    });

    it('does not apply a second effect when the response is lost after commit and the message is delivered again', async () => {
      // Prepare
      const caseId = `CASE-${randomUUID()}`;
      await worker(sqsEvent([sqsRecordFactory(stageChanged(caseId, 1))]), lambdaContext());
      const record = sqsRecordFactory(deadlineRequested(caseId, `case:${caseId}:deadline:v1`));

      // Act: the first response is discarded (crash between commit and delete), SQS delivers the message again.
      await worker(sqsEvent([record]), lambdaContext());
      const redelivery = await worker(
        sqsEvent([{ ...record, attributes: { ...record.attributes, ApproximateReceiveCount: '2' } }]),
        lambdaContext(),
      );

      // Assess
      expect(redelivery).toEqual({ batchItemFailures: [] });
      const [kase] = await db.sql`select deadline_version from cases where case_id = ${caseId}`;
      expect(kase?.deadline_version).toBe(1);
      expect(
        Number((await db.sql`select count(*) from case_deadlines where case_id = ${caseId}`)[0]?.count),
      ).toBe(1);
    });

    it('rejects the same key with a different payload after COMPLETED as IDEMPOTENCY_HASH_MISMATCH, writing nothing', async () => {
      // Prepare
      const original = payment();
      await worker(sqsEvent([sqsRecordFactory(original)]), lambdaContext());
      const hashBefore = (await inboxRow(original.idempotencyKey))?.request_hash;
      const otherPaymentId = `PAY-${randomUUID()}`;
      const conflicting = {
        ...original,
        messageId: `msg_${randomUUID()}`,
        payload: { ...(original.payload as object), paymentId: otherPaymentId, amount: '99.00' },
      };

      // Act
      const mismatch = await worker(sqsEvent([sqsRecordFactory(conflicting)]), lambdaContext());
      const originalAgain = await worker(sqsEvent([sqsRecordFactory(original)]), lambdaContext());

      // Assess: the conflicting message is terminal (quarantined and acknowledged), never applied; the row keeps
      // the first message's status and hash, and the original is still a duplicate no-op.
      expect(mismatch).toEqual({ batchItemFailures: [] });
      expect(originalAgain).toEqual({ batchItemFailures: [] });
      expect(await ledgerCount(otherPaymentId)).toBe(0);
      expect(await ledgerCount((original.payload as { paymentId: string }).paymentId)).toBe(1);
      const row = await inboxRow(original.idempotencyKey);
      expect(row).toMatchObject({ status: 'COMPLETED', request_hash: hashBefore, receive_count: 3 });
      const quarantine = await db.sql`
      select reason_code, idempotency_key from worker_quarantine where idempotency_key = ${original.idempotencyKey}
    `;
      expect(quarantine).toEqual([
        { reason_code: 'IDEMPOTENCY_HASH_MISMATCH', idempotency_key: original.idempotencyKey },
      ]);
    });

    it('reports exactly the failing record of a batch of 5 and commits the other four, with no partial write of it', async () => {
      // Prepare: #3 asks for the deadline of a case that does not exist: its handler's write finds no case and
      // it fails terminally; with policy dlq it is reported (left for the DLQ) instead of quarantined.
      const dlqWorker = exampleWorker(db.sql, { commitMode, terminalPolicy: 'dlq' });
      const envelopes = [
        payment(),
        payment(),
        {
          // A missing case is retryable by default; this producer makes it terminal at once.
          ...deadlineRequested(`CASE-missing-${randomUUID()}`, `k-${randomUUID()}`),
          attemptPolicy: { terminalAfterCodes: ['CASE_NOT_FOUND'] },
        },
        payment(),
        payment(),
      ];
      const records = envelopes.map((envelope) => sqsRecordFactory(envelope));

      // Act
      const response = await dlqWorker(sqsEvent(records), lambdaContext());

      // Assess
      expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: records[2]?.messageId }] });
      for (const index of [0, 1, 3, 4]) {
        const envelope = envelopes[index];
        expect(await ledgerCount((envelope.payload as { paymentId: string }).paymentId)).toBe(1);
        expect((await inboxRow(envelope.idempotencyKey))?.status).toBe('COMPLETED');
      }
      const failed = await inboxRow(envelopes[2]?.idempotencyKey);
      expect(failed).toMatchObject({
        status: 'FAILED_TERMINAL',
        failure_code: 'CASE_NOT_FOUND',
        receive_count: 1,
      });
      const caseId = String((envelopes[2]?.payload as { caseId?: string } | undefined)?.caseId);
      expect(await db.sql`select * from case_deadlines where case_id = ${caseId}`).toHaveLength(0);
    });

    it('keeps a case at version 5 when version 4 arrives after it, acknowledging both', async () => {
      // Prepare
      const caseId = `CASE-${randomUUID()}`;

      // Act
      const v5 = await worker(
        sqsEvent([sqsRecordFactory(stageChanged(caseId, 5, 'REVIEW'))]),
        lambdaContext(),
      );
      const v4 = await worker(
        sqsEvent([sqsRecordFactory(stageChanged(caseId, 4, 'INVESTIGATION'))]),
        lambdaContext(),
      );

      // Assess
      expect([v5, v4]).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
      expect(await db.sql`select stage, version from cases where case_id = ${caseId}`).toEqual([
        { stage: 'REVIEW', version: 5 },
      ]);
      expect((await inboxRow(`case:${caseId}:stage:v4`))?.status).toBe('COMPLETED');
    });

    it('writes one ledger row when PaymentCaptured is replayed under a new idempotency key', async () => {
      // Prepare
      const first = payment();
      const replay = { ...first, messageId: `msg_${randomUUID()}`, idempotencyKey: `replay:${randomUUID()}` };

      // Act
      await worker(sqsEvent([sqsRecordFactory(first)]), lambdaContext());
      const response = await worker(sqsEvent([sqsRecordFactory(replay)]), lambdaContext());

      // Assess
      expect(response).toEqual({ batchItemFailures: [] });
      expect(await ledgerCount((first.payload as { paymentId: string }).paymentId)).toBe(1);
      expect((await inboxRow(replay.idempotencyKey))?.status).toBe('COMPLETED');
    });

    it('keeps one case_deadlines row: deadline_version 1 after a duplicate, 2 after a new key', async () => {
      // Prepare
      const caseId = `CASE-${randomUUID()}`;
      await worker(sqsEvent([sqsRecordFactory(stageChanged(caseId, 1))]), lambdaContext());
      const first = deadlineRequested(caseId, `case:${caseId}:deadline:v1`, '2026-07-06T10:15:00Z');

      // Act
      await worker(sqsEvent([sqsRecordFactory(first)]), lambdaContext());
      await worker(sqsEvent([sqsRecordFactory(first)]), lambdaContext());
      const afterDuplicate = await db.sql`select deadline_version from cases where case_id = ${caseId}`;
      await worker(
        sqsEvent([
          sqsRecordFactory(deadlineRequested(caseId, `case:${caseId}:deadline:v2`, '2026-08-01T00:00:00Z')),
        ]),
        lambdaContext(),
      );

      // Assess
      expect(afterDuplicate).toEqual([{ deadline_version: 1 }]);
      const deadlines =
        await db.sql`select deadline_type, deadline_at from case_deadlines where case_id = ${caseId}`;
      expect(deadlines).toHaveLength(1);
      expect(deadlines[0]?.deadline_type).toBe('INVESTIGATION_SLA');
      expect((deadlines[0]?.deadline_at as Date | undefined)?.toISOString()).toBe('2026-08-31T00:00:00.000Z');
      expect(await db.sql`select deadline_version, deadline_at from cases where case_id = ${caseId}`).toEqual(
        [{ deadline_version: 2, deadline_at: new Date('2026-08-31T00:00:00.000Z') }],
      );
    });
  },
);
