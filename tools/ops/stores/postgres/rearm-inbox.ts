import type postgres from 'postgres';

/** What {@link rearmInbox} did to an inbox row. */
export interface RearmResult {
  /** Status before, or null when the key has no row. */
  readonly previousStatus: string | null;
  readonly previousAttempts: number | null;
  /** True when the row was reset to FAILED_RETRYABLE with a fresh attempt budget. */
  readonly rearmed: boolean;
}

/**
 * Gives a failed idempotency key a fresh start before its message is sent again (redrive, release): a
 * FAILED_TERMINAL or FAILED_RETRYABLE row becomes FAILED_RETRYABLE with `receive_count` 0, so the worker
 * processes the resent message instead of repeating the terminal outcome, with its whole business attempt
 * budget. COMPLETED rows are never touched (the resent message stays a duplicate no-op), nor PROCESSING
 * rows, nor rows that failed with IDEMPOTENCY_HASH_MISMATCH (the key belongs to a different request).
 */
export async function rearmInbox(
  sql: postgres.Sql | postgres.TransactionSql,
  input: { consumer: string; idempotencyKey: string },
): Promise<RearmResult> {
  const [before] = await sql<{ status: string; attempts: number; failureCode: string | null }[]>`
    select status, receive_count as attempts, failure_code as "failureCode"
    from worker_inbox
    where consumer = ${input.consumer} and idempotency_key = ${input.idempotencyKey}
  `;
  if (!before) return { previousStatus: null, previousAttempts: null, rearmed: false };
  const eligible =
    (before.status === 'FAILED_TERMINAL' || before.status === 'FAILED_RETRYABLE') &&
    before.failureCode !== 'IDEMPOTENCY_HASH_MISMATCH';
  if (!eligible) return { previousStatus: before.status, previousAttempts: before.attempts, rearmed: false };
  const updated = await sql`
    update worker_inbox
    set status = 'FAILED_RETRYABLE', receive_count = 0
    where consumer = ${input.consumer} and idempotency_key = ${input.idempotencyKey}
      and status in ('FAILED_TERMINAL', 'FAILED_RETRYABLE')
  `;
  return { previousStatus: before.status, previousAttempts: before.attempts, rearmed: updated.count === 1 };
}
