import type postgres from 'postgres';
import type { UnfinishedInbox } from '../../ops-store.ts';

/**
 * The oldest inbox row of a consumer the worker has seen but not finished (RECEIVED, PROCESSING or FAILED_RETRYABLE),
 * by first sighting: it covers every message the worker has picked up at least once (`queue status`).
 */
export function oldestUnfinished(sql: postgres.Sql): UnfinishedInbox {
  return {
    async oldest(consumer) {
      const [oldest] = await sql<{ idempotencyKey: string; firstSeenAt: Date }[]>`
        select idempotency_key as "idempotencyKey", first_seen_at as "firstSeenAt"
        from worker_inbox
        where consumer = ${consumer} and status in ('RECEIVED', 'PROCESSING', 'FAILED_RETRYABLE')
        order by first_seen_at
        limit 1
      `;
      return oldest;
    },
  };
}
