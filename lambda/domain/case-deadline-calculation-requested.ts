import * as z from 'zod/mini';
import { defineHandler, TerminalError } from '../index.ts';

/** Service-level agreement per stage, in days. */
export const STAGE_SLA_DAYS: Readonly<Record<string, number>> = { INVESTIGATION: 30, REVIEW: 14 };

const DAY_MS = 86_400_000;

/**
 * `CaseDeadlineCalculationRequested` v1 `{ caseId, stage, effectiveAt }`: upserts the case's
 * `<STAGE>_SLA` deadline (`effectiveAt` + SLA), sets `cases.deadline_at` and increments
 * `cases.deadline_version` — in one statement (a data-modifying CTE), so the path costs one round trip.
 * A stage without an SLA is terminal `INVALID_STAGE`; an unknown case is terminal `CASE_NOT_FOUND`.
 */
export const caseDeadlineCalculationRequested = defineHandler({
  messageType: 'CaseDeadlineCalculationRequested',
  schemaVersion: 1,
  payload: z.object({
    caseId: z.string().check(z.minLength(1), z.maxLength(200)),
    stage: z.string().check(z.minLength(1), z.maxLength(50)),
    effectiveAt: z.iso.datetime({ offset: true }),
  }),
  async handle({ sql, payload, envelope }) {
    const days = STAGE_SLA_DAYS[payload.stage];
    if (days === undefined) {
      // The stage is a payload value: the stored message names the rule, not the value.
      throw new TerminalError(
        'INVALID_STAGE',
        `the payload's stage has no SLA (supported: ${Object.keys(STAGE_SLA_DAYS).join(', ')})`,
      );
    }
    const deadlineType = `${payload.stage}_SLA`;
    const deadlineAt = new Date(Date.parse(payload.effectiveAt) + days * DAY_MS);
    const rows = await sql`
      with updated_case as (
        update cases
        set deadline_at = ${deadlineAt}, deadline_version = deadline_version + 1
        where case_id = ${payload.caseId}
        returning case_id
      )
      insert into case_deadlines (case_id, deadline_type, deadline_at, source_event_id)
      select case_id, ${deadlineType}, ${deadlineAt}, ${envelope.messageId} from updated_case
      on conflict (case_id, deadline_type) do update
        set deadline_at = excluded.deadline_at, source_event_id = excluded.source_event_id, updated_at = now()
      returning case_id
    `;
    if (rows.length === 0) {
      throw new TerminalError(
        'CASE_NOT_FOUND',
        `case ${payload.caseId} does not exist; send its CaseStageChanged first`,
      );
    }
    return { resultRef: `case_deadlines/${payload.caseId}/${deadlineType}` };
  },
});
