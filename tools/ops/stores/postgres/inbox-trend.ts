import type postgres from 'postgres';
import type { InboxTrend, InboxTrendPeriod, InboxTypeTrend } from '../../ops-store.ts';
import type { TrendWindow } from '../../trend-window.ts';

interface TrendRow {
  readonly period: number | null;
  readonly messageType: string | null;
  readonly arrivals: number;
  readonly completions: number;
  readonly failures: number;
  readonly p50: number | null;
  readonly p99: number | null;
}

const ms = (value: number | null) => (value === null ? null : Math.round(Number(value)));

/**
 * `queue trend` on PostgreSQL: the consumer's `worker_inbox` rows of the window, one statement, per period and per
 * message type (grouping sets): arrivals by `first_seen_at`, completions by `completed_at`, failures by `failed_at`
 * (the latest failed attempt of a row, kept after it completes), p50/p99 (`percentile_disc`, nearest rank) of
 * `completed_at - first_seen_at`. `started_at` is not a start of the work: the claim of a first delivery writes it
 * and `completed_at` with one transaction's `now()`, so the time measured is from the first sighting (zero for a
 * message done at its first delivery, the retries' delay for the others); the handler's own time is the EMF metric
 * `ProcessingMs`, read from CloudWatch in AWS. Reads the consumer's rows through the primary key's leading column.
 */
export async function inboxTrend(
  sql: postgres.Sql,
  options: { consumer: string; window: TrendWindow },
): Promise<InboxTrend> {
  const { consumer, window } = options;
  const { start, end, periodSeconds } = window;
  const rows = await sql<TrendRow[]>`
      with seen as (
        select message_type, status, first_seen_at, completed_at, failed_at
        from worker_inbox
        where consumer = ${consumer}
          and (first_seen_at >= ${start} and first_seen_at < ${end}
            or completed_at >= ${start} and completed_at < ${end}
            or failed_at >= ${start} and failed_at < ${end})
      ), events as (
        select 'arrival' as kind, message_type, first_seen_at as at, null::float8 as ms from seen
        union all
        select 'completion', message_type, completed_at,
          extract(epoch from (completed_at - first_seen_at))::float8 * 1000
        from seen where status = 'COMPLETED'
        union all
        select 'failure', message_type, failed_at, null from seen where failed_at is not null
      ), placed as (
        select kind, message_type, ms,
          floor(extract(epoch from (at - ${start}::timestamptz)) / ${periodSeconds}::int)::int as period
        from events where at >= ${start} and at < ${end}
      )
      select
        case when grouping(period) = 0 then period end as period,
        case when grouping(message_type) = 0 then message_type end as "messageType",
        (count(*) filter (where kind = 'arrival'))::int as arrivals,
        (count(*) filter (where kind = 'completion'))::int as completions,
        (count(*) filter (where kind = 'failure'))::int as failures,
        percentile_disc(0.5) within group (order by ms) as p50,
        percentile_disc(0.99) within group (order by ms) as p99
      from placed
      group by grouping sets ((period), (message_type))
    `;
  const byPeriod = new Map(rows.filter((r) => r.period !== null).map((r) => [r.period as number, r]));
  const periods: InboxTrendPeriod[] = window.periods.map((periodStart, index) => {
    const row = byPeriod.get(index);
    return {
      start: periodStart,
      arrivals: row?.arrivals ?? 0,
      completions: row?.completions ?? 0,
      failures: row?.failures ?? 0,
      p50Ms: ms(row?.p50 ?? null),
      p99Ms: ms(row?.p99 ?? null),
    };
  });
  const byType: InboxTypeTrend[] = rows
    .filter((r) => r.messageType !== null)
    .map((r) => ({
      messageType: r.messageType as string,
      arrivals: r.arrivals,
      completions: r.completions,
      failures: r.failures,
      p99Ms: ms(r.p99),
    }))
    .sort((a, b) => b.arrivals - a.arrivals || a.messageType.localeCompare(b.messageType));
  return { latency: 'first-seen-to-completed', periods, byType };
}
