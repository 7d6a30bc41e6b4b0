import type postgres from 'postgres';
import type { QuarantineListOptions } from '../../ops-store.ts';
import type { OpsOutput } from '../../output.ts';
import { emit } from '../../output.ts';
import type { QuarantineListEntry, QuarantineListResult } from '../../render-quarantine-list.ts';
import { renderQuarantineList } from '../../render-quarantine-list.ts';

/**
 * `quarantine list`: quarantined messages of a consumer, newest first (`oldestFirst`: oldest first), without
 * bodies. By default only entries not released yet; `includeReleased` lists all. The filter's reason code, message
 * type and `since` / `before` (on `last_quarantined_at`) narrow it.
 */
export async function quarantineList(
  deps: { sql: postgres.Sql; out: OpsOutput },
  options: QuarantineListOptions,
): Promise<QuarantineListResult> {
  const { sql, out } = deps;
  const { messageType, since, before } = options;
  const entries = await sql<QuarantineListEntry[]>`
    select quarantine_id::text as "quarantineId", message_type as "messageType",
      idempotency_key as "idempotencyKey", reason_code as "reasonCode", occurrences,
      first_quarantined_at as "firstQuarantinedAt", last_quarantined_at as "lastQuarantinedAt",
      released_at as "releasedAt", released_message_id as "releasedMessageId"
    from worker_quarantine
    where consumer = ${options.consumer}
      ${options.includeReleased ? sql`` : sql`and released_at is null`}
      ${options.reasonCode ? sql`and reason_code = ${options.reasonCode}` : sql``}
      ${messageType ? sql`and message_type = ${messageType}` : sql``}
      ${since ? sql`and last_quarantined_at >= ${since}` : sql``}
      ${before ? sql`and last_quarantined_at < ${before}` : sql``}
    order by ${
      options.oldestFirst
        ? sql`last_quarantined_at asc, quarantine_id asc`
        : sql`last_quarantined_at desc, quarantine_id desc`
    }
    limit ${options.limit ?? 50}
  `;
  const byReason: Record<string, number> = {};
  for (const entry of entries) byReason[entry.reasonCode] = (byReason[entry.reasonCode] ?? 0) + 1;
  const result: QuarantineListResult = { consumer: options.consumer, entries: [...entries], byReason };
  emit(out, result, () => renderQuarantineList(result, options.includeReleased === true));
  return result;
}
