import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTestDatabase } from '../support/database.ts';
import {
  caseStageEnvelope,
  envelopeFactory,
  lambdaContext,
  sqsEvent,
  sqsRecordFactory,
} from '../support/sqs-event.ts';
import { exampleWorker } from '../support/test-worker.ts';

const db = await createTestDatabase();
const DAY_MS = 86_400_000;

const deadline = (caseId: string, stage: string, effectiveAt: string) =>
  envelopeFactory({
    messageType: 'CaseDeadlineCalculationRequested',
    idempotencyKey: `deadline:${caseId}:${stage}:${effectiveAt}`,
    aggregateType: 'case',
    aggregateId: caseId,
    payload: { caseId, stage, effectiveAt },
  });
const caseRow = async (caseId: string) =>
  (await db.sql`select stage, deadline_at, deadline_version from cases where case_id = ${caseId}`)[0];
const inboxRow = async (key: string) =>
  (await db.sql`select status, failure_code from worker_inbox where idempotency_key = ${key}`)[0];

describe.each(['per-message', 'per-batch'] as const)(
  'Handler: CaseDeadlineCalculationRequested, %s',
  (commitMode) => {
    const worker = exampleWorker(db.sql, { commitMode });

    it('retries a deadline whose case does not exist yet, and applies it once the case arrives', async () => {
      // Prepare: the deadline request overtook the event that creates its case
      const caseId = `CASE-${randomUUID()}`;
      const early = deadline(caseId, 'INVESTIGATION', '2026-07-01T00:00:00Z');

      // Act
      const first = await worker(sqsEvent([sqsRecordFactory(early)]), lambdaContext()).catch(
        (e: unknown) => e,
      );
      const afterFirst = await inboxRow(early.idempotencyKey);
      await worker(sqsEvent([sqsRecordFactory(caseStageEnvelope(caseId, 1))]), lambdaContext());
      const second = await worker(sqsEvent([sqsRecordFactory(early, { receiveCount: 2 })]), lambdaContext());

      // Assess
      expect((first as Error).message).toContain('CASE_NOT_FOUND');
      expect(afterFirst).toEqual({ status: 'FAILED_RETRYABLE', failure_code: 'CASE_NOT_FOUND' });
      expect(second.batchItemFailures).toEqual([]);
      expect(await caseRow(caseId)).toMatchObject({
        deadline_at: new Date(Date.parse('2026-07-01T00:00:00Z') + 30 * DAY_MS),
        deadline_version: 1,
      });
    });

    it('never lets an older deadline request replace a newer one (a reordered or released message)', async () => {
      // Prepare: the case moved to REVIEW and its REVIEW deadline is applied
      const caseId = `CASE-${randomUUID()}`;
      await worker(
        sqsEvent([sqsRecordFactory(caseStageEnvelope(caseId, 2, { stage: 'REVIEW' }))]),
        lambdaContext(),
      );
      const newer = deadline(caseId, 'REVIEW', '2026-08-01T00:00:00Z');
      await worker(sqsEvent([sqsRecordFactory(newer)]), lambdaContext());
      const before = await caseRow(caseId);

      // Act: the INVESTIGATION deadline, effective earlier, arrives now
      const older = deadline(caseId, 'INVESTIGATION', '2026-07-01T00:00:00Z');
      const response = await worker(sqsEvent([sqsRecordFactory(older)]), lambdaContext());

      // Assess: acknowledged as a stale no-op; the case keeps the newer deadline
      expect(response.batchItemFailures).toEqual([]);
      expect(before).toMatchObject({
        deadline_at: new Date(Date.parse('2026-08-01T00:00:00Z') + 14 * DAY_MS),
      });
      expect(await caseRow(caseId)).toEqual(before);
      expect(await inboxRow(older.idempotencyKey)).toEqual({
        status: 'COMPLETED',
        failure_code: null,
      });
      const deadlines = await db.sql`select deadline_type from case_deadlines where case_id = ${caseId}`;
      expect(deadlines.map((row) => row.deadline_type)).toEqual(['REVIEW_SLA']);
    });
  },
);
