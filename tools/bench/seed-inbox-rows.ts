import type postgres from 'postgres';

/** The request hash of every seeded row (the rows are never compared with a message). */
const SEED_HASH = 'a'.repeat(64);

/** What the rows of one {@link seedInboxRows} call look like. */
export interface SeededInboxRow {
  /** Inbox status. @default 'COMPLETED' (then `completed_at` = first seen) */
  readonly status?: string;
  /** Days before now of `first_seen_at` (and `completed_at`). */
  readonly ageDays: number;
  /** Days before now of `last_seen_at`. @default ageDays */
  readonly lastSeenDays?: number;
}

/**
 * Inserts `count` inbox rows of `consumer` (`PaymentCaptured` v1, keys `<prefix>1` … `<prefix><count>`) in one
 * statement, their timestamps `ageDays` ago unless overridden: the old rows a retention purge finds, for the
 * retention tests and the bench's purge line.
 *
 * @internal
 */
export async function seedInboxRows(
  sql: postgres.Sql,
  consumer: string,
  prefix: string,
  count: number,
  row: SeededInboxRow,
): Promise<void> {
  const at = `${row.ageDays} days`;
  const seen = `${row.lastSeenDays ?? row.ageDays} days`;
  const status = row.status ?? 'COMPLETED';
  await sql`
    insert into worker_inbox (consumer, idempotency_key, message_type, schema_version, aggregate_type, aggregate_id,
      status, request_hash, first_seen_at, last_seen_at, completed_at, receive_count)
    select ${consumer}, ${prefix} || i, 'PaymentCaptured', 1, 'payment', 'PAY-' || i, ${status}, ${SEED_HASH},
           now() - ${at}::interval, now() - ${seen}::interval,
           case when ${status} = 'COMPLETED' then now() - ${at}::interval end, 1
      from generate_series(1, ${count}) as i
  `;
}
