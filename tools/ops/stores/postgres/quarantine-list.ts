import type postgres from 'postgres';
import type { OpsOutput } from '../../output.ts';
import { emit } from '../../output.ts';
import type { QuarantineListEntry, QuarantineListResult } from '../../render-quarantine-list.ts';
import { renderQuarantineList } from '../../render-quarantine-list.ts';

/**
 * `quarantine list`: quarantined messages of a consumer, newest first, without bodies. By default only
 * entries not released yet; `includeReleased` lists all.
 */
export async function quarantineList(
  deps: { sql: postgres.Sql; out: OpsOutput },
  options: { consumer: string; includeReleased?: boolean; reasonCode?: string; limit?: number },
): Promise<QuarantineListResult> {
  const { sql, out } = deps;
  const entries = await sql<QuarantineListEntry[]>`
    select quarantine_id::text as "quarantineId", message_type as "messageType",
      idempotency_key as "idempotencyKey", reason_code as "reasonCode", occurrences,
      first_quarantined_at as "firstQuarantinedAt", last_quarantined_at as "lastQuarantinedAt",
      released_at as "releasedAt", released_message_id as "releasedMessageId"
    from worker_quarantine
    where consumer = ${options.consumer}
      ${options.includeReleased ? sql`` : sql`and released_at is null`}
      ${options.reasonCode ? sql`and reason_code = ${options.reasonCode}` : sql``}
    order by last_quarantined_at desc, quarantine_id desc
    limit ${options.limit ?? 50}
  `;
  const byReason: Record<string, number> = {};
  for (const entry of entries) byReason[entry.reasonCode] = (byReason[entry.reasonCode] ?? 0) + 1;
  const result: QuarantineListResult = { consumer: options.consumer, entries: [...entries], byReason };
  emit(out, result, () => renderQuarantineList(result, options.includeReleased === true));
  return result;
}
