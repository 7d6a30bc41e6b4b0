import type postgres from 'postgres';
import type { Clock } from '../../clock.ts';
import type { OpsOutput } from '../../output.ts';
import { emit } from '../../output.ts';
import {
  type HotEntry,
  type InboxHotResult,
  LOCK_WAIT_CODES,
  renderInboxHot,
} from '../../render-inbox-hot.ts';

/**
 * `inbox hot`: the aggregates, and the keys, of one consumer holding the most retries, claims in flight and lock
 * waits, among the rows last seen in the window. In flight is a row PROCESSING (a per-batch claim): a per-message
 * claim is uncommitted until its transaction ends, so no other session sees it.
 */
export async function inboxHot(
  deps: { sql: postgres.Sql; out: OpsOutput; clock: Clock },
  options: { consumer: string; limit: number; sinceSeconds: number },
): Promise<InboxHotResult> {
  const { sql, out, clock } = deps;
  const now = clock.now();
  const from = new Date(now.getTime() - options.sinceSeconds * 1000);
  const codes = [...LOCK_WAIT_CODES];
  const seen = sql`consumer = ${options.consumer} and last_seen_at > ${from} and last_seen_at <= ${now}`;
  const figures = sql`
    sum(greatest(receive_count - 1, 0))::int as retries,
    (count(*) filter (where status = 'PROCESSING'))::int as "inFlight",
    (count(*) filter (where failure_code = any(${codes}::text[])))::int as "lockWaits"
  `;
  const hot = sql`
    having sum(greatest(receive_count - 1, 0)) > 0 or count(*) filter (where status = 'PROCESSING') > 0
      or count(*) filter (where failure_code = any(${codes}::text[])) > 0
    order by retries desc, "inFlight" desc, "lockWaits" desc
    limit ${options.limit}
  `;
  const aggregates = await sql<HotEntry[]>`
    select aggregate_type as "aggregateType", aggregate_id as "aggregateId", count(*)::int as keys, ${figures}
    from worker_inbox where ${seen}
    group by aggregate_type, aggregate_id ${hot}
  `;
  const keys = await sql<(HotEntry & { idempotencyKey: string; status: string })[]>`
    select idempotency_key as "idempotencyKey", min(status) as status, min(aggregate_type) as "aggregateType",
      min(aggregate_id) as "aggregateId", 1 as keys, ${figures}
    from worker_inbox where ${seen}
    group by idempotency_key ${hot}
  `;
  const result: InboxHotResult = {
    consumer: options.consumer,
    at: now.toISOString(),
    sinceSeconds: options.sinceSeconds,
    aggregates: [...aggregates],
    keys: [...keys],
  };
  emit(out, result, () => renderInboxHot(result));
  return result;
}
