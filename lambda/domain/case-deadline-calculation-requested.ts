import * as z from 'zod/mini';
import { defineHandler, RetryableError, TerminalError } from '../index.ts';

/** Service-level agreement per stage, in days. */
export const STAGE_SLA_DAYS: Readonly<Record<string, number>> = { INVESTIGATION: 30, REVIEW: 14 };

const DAY_MS = 86_400_000;

/**
 * The deadline a request asks for, the same on either store: `<STAGE>_SLA`, due `effectiveAt` + the stage's SLA.
 *
 * @throws TerminalError `INVALID_STAGE` for a stage without an SLA (the message names the rule, not the value).
 */
export function stageDeadline(payload: { stage: string; effectiveAt: string }): {
  deadlineType: string;
  effectiveAt: Date;
  deadlineAt: Date;
} {
  const days = STAGE_SLA_DAYS[payload.stage];
  if (days === undefined) {
    throw new TerminalError(
      'INVALID_STAGE',
      `the payload's stage has no SLA (supported: ${Object.keys(STAGE_SLA_DAYS).join(', ')})`,
    );
  }
  const effectiveAt = new Date(Date.parse(payload.effectiveAt));
  return {
    deadlineType: `${payload.stage}_SLA`,
    effectiveAt,
    deadlineAt: new Date(effectiveAt.getTime() + days * DAY_MS),
  };
}

/** The payload of `CaseDeadlineCalculationRequested` v1, the message's contract on either store. */
export const caseDeadlineCalculationRequestedPayload = z.object({
  caseId: z.string().check(z.minLength(1), z.maxLength(200)),
  stage: z.string().check(z.minLength(1), z.maxLength(50)),
  effectiveAt: z.iso.datetime({ offset: true }),
});

/**
 * `CaseDeadlineCalculationRequested` v1 `{ caseId, stage, effectiveAt }`: upserts the case's
 * `<STAGE>_SLA` deadline (`effectiveAt` + SLA), sets `cases.deadline_at` and increments
 * `cases.deadline_version` — in one statement (a data-modifying CTE), so the path costs one round trip.
 *
 * - Out of order: the case keeps the deadline of the latest `effectiveAt` it has seen (of equal ones, the last
 *   applied); an older request (a reordered delivery, or a quarantined message released after newer ones) is a
 *   successful no-op (`STALE_VERSION_SKIPPED`) and never rolls the case back.
 * - A case that does not exist yet is retryable `CASE_NOT_FOUND`: on a standard queue the request may arrive
 *   before the `CaseStageChanged` that creates the case. The attempt policy bounds the wait (backoff, then
 *   terminal after `maxBusinessAttempts` or `retryableUntil`).
 * - A stage without an SLA is terminal `INVALID_STAGE`.
 */
export const caseDeadlineCalculationRequested = defineHandler({
  messageType: 'CaseDeadlineCalculationRequested',
  schemaVersion: 1,
  payload: caseDeadlineCalculationRequestedPayload,
  // Known from the payload: stored by the inbox claim, no statement after the handler.
  resultRef: ({ payload }) => `case_deadlines/${payload.caseId}/${payload.stage}_SLA`,
  async handle({ sql, payload, envelope }) {
    const { deadlineType, effectiveAt, deadlineAt } = stageDeadline(payload);
    const [outcome] = await sql<{ found: boolean; applied: boolean }[]>`
      with updated_case as (
        update cases
        set deadline_at = ${deadlineAt}, deadline_effective_at = ${effectiveAt},
            deadline_version = deadline_version + 1
        where case_id = ${payload.caseId}::text
          and (deadline_effective_at is null or deadline_effective_at <= ${effectiveAt})
        returning case_id
      ),
      upserted as (
        insert into case_deadlines (case_id, deadline_type, deadline_at, source_event_id)
        select case_id, ${deadlineType}::text, ${deadlineAt}, ${envelope.messageId}::text from updated_case
        on conflict (case_id, deadline_type) do update
          set deadline_at = excluded.deadline_at, source_event_id = excluded.source_event_id, updated_at = now()
        returning case_id
      )
      select exists (select 1 from cases where case_id = ${payload.caseId}::text) as found,
             exists (select 1 from upserted) as applied
    `;
    if (!outcome?.found) {
      throw new RetryableError(
        'CASE_NOT_FOUND',
        "the payload's case does not exist yet; retried with backoff until its CaseStageChanged arrives or the attempt policy gives up",
      );
    }
    return { stale: !outcome.applied };
  },
});
