import type postgres from 'postgres';
import { type ClassifiedItem, classifyFailures, NO_INBOX_ENTRY } from '../../classify-failures.ts';
import type { QuarantineListOptions } from '../../ops-store.ts';
import type { OpsOutput } from '../../output.ts';
import { emit } from '../../output.ts';
import type { QuarantineListEntry, QuarantineListResult } from '../../render-quarantine-list.ts';
import { renderQuarantineList } from '../../render-quarantine-list.ts';

/**
 * `quarantine list`: quarantined messages of a consumer, newest first (`oldestFirst`: oldest first), without bodies, each with the worker version
 * that quarantined it and the one that first saw its key (its inbox row's `first_version`). By default only entries
 * not released yet; `includeReleased` lists all. The filter's reason code, message type and `since` / `before` (on
 * `last_quarantined_at`) narrow it. With `group`, every matching entry (not only the `limit` listed) is
 * counted by reason code and first-seen version, in one grouped query.
 */
export async function quarantineList(
  deps: { sql: postgres.Sql; out: OpsOutput },
  options: QuarantineListOptions,
): Promise<QuarantineListResult> {
  const { sql, out } = deps;
  const { messageType, since, before } = options;
  const matching = () => sql`
    from worker_quarantine as q
    left join worker_inbox as i on i.consumer = q.consumer and i.idempotency_key = q.idempotency_key
    where q.consumer = ${options.consumer}
      ${options.includeReleased ? sql`` : sql`and q.released_at is null`}
      ${options.reasonCode ? sql`and q.reason_code = ${options.reasonCode}` : sql``}
      ${messageType ? sql`and q.message_type = ${messageType}` : sql``}
      ${since ? sql`and q.last_quarantined_at >= ${since}` : sql``}
      ${before ? sql`and q.last_quarantined_at < ${before}` : sql``}
  `;
  const entries = await sql<QuarantineListEntry[]>`
    select q.quarantine_id::text as "quarantineId", q.message_type as "messageType",
      q.idempotency_key as "idempotencyKey", q.reason_code as "reasonCode", q.occurrences,
      q.first_quarantined_at as "firstQuarantinedAt", q.last_quarantined_at as "lastQuarantinedAt",
      q.released_at as "releasedAt", q.released_message_id as "releasedMessageId",
      q.worker_version as "workerVersion", i.first_version as "firstVersion"
    ${matching()}
    order by ${
      options.oldestFirst
        ? sql`q.last_quarantined_at asc, q.quarantine_id asc`
        : sql`q.last_quarantined_at desc, q.quarantine_id desc`
    }
    limit ${options.limit ?? 50}
  `;
  const byReason: Record<string, number> = {};
  for (const entry of entries) byReason[entry.reasonCode] = (byReason[entry.reasonCode] ?? 0) + 1;
  const result: QuarantineListResult = {
    consumer: options.consumer,
    entries: [...entries],
    byReason,
    ...(options.group
      ? { classes: classifyFailures(await countedClasses(sql, matching()), NO_INBOX_ENTRY) }
      : {}),
  };
  emit(out, result, () => renderQuarantineList(result, options.includeReleased === true));
  return result;
}

/** The matching entries counted by reason code and inbox state, with up to three keys of each. */
async function countedClasses(sql: postgres.Sql, matching: postgres.Fragment): Promise<ClassifiedItem[]> {
  const rows = await sql<
    {
      code: string;
      firstVersion: string | null;
      keyed: boolean;
      inInbox: boolean;
      count: number;
      keys: string[];
    }[]
  >`
    select q.reason_code as code, i.first_version as "firstVersion", q.idempotency_key is not null as keyed,
      i.idempotency_key is not null as "inInbox", count(*)::int as count,
      coalesce((array_agg(distinct q.idempotency_key) filter (where q.idempotency_key is not null))[1:3], '{}') as keys
    ${matching}
    group by 1, 2, 3, 4
  `;
  return rows.map((row) => ({
    code: row.code,
    keys: row.keyed ? row.keys : [],
    inbox: row.inInbox ? { firstVersion: row.firstVersion } : undefined,
    count: row.count,
  }));
}
