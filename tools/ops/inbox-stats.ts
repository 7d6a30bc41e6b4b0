import type postgres from 'postgres';
import type { Clock } from './clock.ts';
import type { OpsOutput } from './output.ts';
import { emit, formatSeconds, table } from './output.ts';

/** Result of {@link inboxStats}. */
export interface InboxStatsResult {
  readonly consumer: string;
  readonly at: string;
  /** Rows per status (every status listed, zero included). */
  readonly byStatus: Record<string, number>;
  /** Unfinished and failed rows per status and failure code. */
  readonly failures: Array<{ status: string; failureCode: string | null; count: number }>;
  /** The oldest FAILED_RETRYABLE row, by first sighting. */
  readonly oldestRetryable: {
    idempotencyKey: string;
    messageType: string;
    failureCode: string | null;
    attempts: number;
    firstSeenAt: Date;
    ageSeconds: number;
  } | null;
  /** Rows completed in the hour before `at`. */
  readonly completedLastHour: number;
  /** Quarantine entries not released yet. */
  readonly openQuarantine: number;
}

const STATUSES = ['RECEIVED', 'PROCESSING', 'COMPLETED', 'FAILED_RETRYABLE', 'FAILED_TERMINAL'] as const;

/**
 * `inbox stats`: counts by status and failure code, the oldest FAILED_RETRYABLE row, completions in the
 * last hour and open quarantine entries, for one consumer.
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
  };
  emit(out, result, () => renderInboxStats(result));
  return result;
}

/**
 * The text of `inbox stats` (shared by the PostgreSQL and the DynamoDB store).
 *
 * @internal
 */
export function renderInboxStats(result: InboxStatsResult): string {
  const { consumer, byStatus } = result;
  return [
    `Inbox of consumer ${consumer} at ${result.at}`,
    table(['status', 'rows'], Object.entries(byStatus)),
    result.failures.length > 0
      ? table(
          ['status', 'failure code', 'rows'],
          result.failures.map((f) => [f.status, f.failureCode, f.count]),
        )
      : 'No unfinished or failed rows.',
    result.oldestRetryable
      ? `Oldest FAILED_RETRYABLE: ${result.oldestRetryable.idempotencyKey} (${result.oldestRetryable.messageType}, ` +
        `${result.oldestRetryable.failureCode ?? 'no code'}, ${result.oldestRetryable.attempts} attempts, ` +
        `first seen ${formatSeconds(result.oldestRetryable.ageSeconds)} ago)`
      : 'Oldest FAILED_RETRYABLE: none',
    `Completed in the last hour: ${result.completedLastHour}`,
    `Open quarantine entries: ${result.openQuarantine}`,
  ].join('\n');
}
