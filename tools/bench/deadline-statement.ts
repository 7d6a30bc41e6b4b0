import type postgres from 'postgres';

const DAY_MS = 86_400_000;
const INVESTIGATION_SLA_DAYS = 30;

/** The fields of a `CaseDeadlineCalculationRequested` v1 envelope the bench's hand-written paths read. */
export interface DeadlineEnvelope {
  messageId: string;
  messageType: string;
  schemaVersion: number;
  idempotencyKey: string;
  aggregateType: string;
  aggregateId: string;
  correlationId?: string;
  payload: { caseId: string; stage: string; effectiveAt: string };
}

/**
 * The domain statement of `CaseDeadlineCalculationRequested` (the example handler's data-modifying CTE, text for
 * text), hand-written: the deadline of an INVESTIGATION case, its SLA from `effectiveAt`.
 *
 * @returns its `case_deadlines` result reference.
 */
export async function applyDeadline(
  tx: postgres.TransactionSql,
  envelope: DeadlineEnvelope,
): Promise<string> {
  const { caseId, stage, effectiveAt } = envelope.payload;
  const deadlineType = `${stage}_SLA`;
  const effectiveAtDate = new Date(Date.parse(effectiveAt));
  const deadlineAt = new Date(effectiveAtDate.getTime() + INVESTIGATION_SLA_DAYS * DAY_MS);
  const [outcome] = await tx<{ found: boolean; applied: boolean }[]>`
      with updated_case as (
        update cases
        set deadline_at = ${deadlineAt}, deadline_effective_at = ${effectiveAtDate},
            deadline_version = deadline_version + 1
        where case_id = ${caseId}::text
          and (deadline_effective_at is null or deadline_effective_at <= ${effectiveAtDate})
        returning case_id
      ),
      upserted as (
        insert into case_deadlines (case_id, deadline_type, deadline_at, source_event_id)
        select case_id, ${deadlineType}::text, ${deadlineAt}, ${envelope.messageId}::text from updated_case
        on conflict (case_id, deadline_type) do update
          set deadline_at = excluded.deadline_at, source_event_id = excluded.source_event_id, updated_at = now()
        returning case_id
      )
      select exists (select 1 from cases where case_id = ${caseId}::text) as found,
             exists (select 1 from upserted) as applied
    `;
  if (!outcome?.found) throw new Error('the bench case does not exist (are the cases created?)');
  return `case_deadlines/${caseId}/${deadlineType}`;
}
