import type postgres from 'postgres';
import type { Clock } from '../../clock.ts';
import type { OpsOutput } from '../../output.ts';
import { emit } from '../../output.ts';
import {
  type DeliveryCounts,
  type DuplicateCounts,
  type InboxStatsResult,
  renderInboxStats,
} from '../../render-inbox-stats.ts';

const STATUSES = ['RECEIVED', 'PROCESSING', 'COMPLETED', 'FAILED_RETRYABLE', 'FAILED_TERMINAL'] as const;

/**
 * `inbox stats`: counts by status and failure code, the oldest FAILED_RETRYABLE row, completions in the
 * last hour, open quarantine entries, the duplicates counted on the rows (redeliveries and resends) and the
 * deliveries per key seen in the last hour (`receive_count`), for one consumer.
 */
export async function inboxStats(
  deps: { sql: postgres.Sql; out: OpsOutput; clock: Clock },
  options: { consumer: string },
): Promise<InboxStatsResult> {
  const { sql, out, clock } = deps;
  const { consumer } = options;
  const now = clock.now();
  const hourAgo = new Date(now.getTime() - 3_600_000);
  const statusRows = await sql<{ status: string; count: number }[]>`
    select status, count(*)::int as count from worker_inbox where consumer = ${consumer} group by status
  `;
  const failures = await sql<{ status: string; failureCode: string | null; count: number }[]>`
    select status, failure_code as "failureCode", count(*)::int as count
    from worker_inbox
    where consumer = ${consumer} and status <> 'COMPLETED'
    group by status, failure_code
    order by count(*) desc, status, failure_code
  `;
  const [oldest] = await sql<
    {
      idempotencyKey: string;
      messageType: string;
      failureCode: string | null;
      attempts: number;
      firstSeenAt: Date;
    }[]
  >`
    select idempotency_key as "idempotencyKey", message_type as "messageType", failure_code as "failureCode",
      receive_count as attempts, first_seen_at as "firstSeenAt"
    from worker_inbox
    where consumer = ${consumer} and status = 'FAILED_RETRYABLE'
    order by first_seen_at
    limit 1
  `;
  const [completed] = await sql<{ count: number }[]>`
    select count(*)::int as count from worker_inbox
    where consumer = ${consumer} and status = 'COMPLETED' and completed_at > ${hourAgo} and completed_at <= ${now}
  `;
  const [quarantined] = await sql<{ count: number }[]>`
    select count(*)::int as count from worker_quarantine where consumer = ${consumer} and released_at is null
  `;
  const [duplicates] = await sql<DuplicateCounts[]>`
    select coalesce(sum(redelivery_count), 0)::int as redeliveries, coalesce(sum(resend_count), 0)::int as resends,
      (count(*) filter (where redelivery_count > 0))::int as "keysRedelivered"
    from worker_inbox where consumer = ${consumer}
  `;
  const [deliveries] = await sql<DeliveryCounts[]>`
    select count(*)::int as keys, coalesce(max(receive_count), 0)::int as "maxPerKey",
      coalesce(avg(receive_count), 0)::float8 as "avgPerKey", (count(*) filter (where receive_count > 1))::int as "keysSeenAgain"
    from worker_inbox
    where consumer = ${consumer} and last_seen_at > ${hourAgo} and last_seen_at <= ${now}
  `;
  const byStatus: Record<string, number> = Object.fromEntries(STATUSES.map((status) => [status, 0]));
  for (const row of statusRows) byStatus[row.status] = row.count;
  const result: InboxStatsResult = {
    consumer,
    at: now.toISOString(),
    byStatus,
    failures: [...failures],
    oldestRetryable: oldest
      ? {
          ...oldest,
          ageSeconds: Math.max(0, Math.round((now.getTime() - oldest.firstSeenAt.getTime()) / 1000)),
        }
      : null,
    completedLastHour: completed?.count ?? 0,
    openQuarantine: quarantined?.count ?? 0,
    duplicates: duplicates ?? { redeliveries: 0, resends: 0, keysRedelivered: 0 },
    deliveriesLastHour: deliveries ?? { keys: 0, maxPerKey: 0, avgPerKey: 0, keysSeenAgain: 0 },
  };
  emit(out, result, () => renderInboxStats(result));
  return result;
}
