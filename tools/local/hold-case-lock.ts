import type postgres from 'postgres';

/**
 * Failure injection: holds `select … for update` on a `cases` row in another transaction until the returned
 * function is called (which releases it and waits for that transaction to end). A worker touching the row
 * meanwhile waits for its lock timeout and fails retryably (`LOCK_TIMEOUT`).
 *
 * @example
 * ```ts
 * const release = await holdCaseLock(sql, 'CASE-1');
 * // ... deliver a message for CASE-1: reported retryable
 * await release();
 * ```
 */
export async function holdCaseLock(sql: postgres.Sql, caseId: string): Promise<() => Promise<void>> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let locked!: () => void;
  const taken = new Promise<void>((resolve) => {
    locked = resolve;
  });
  const transaction = sql.begin(async (tx) => {
    await tx`select 1 from cases where case_id = ${caseId} for update`;
    locked();
    await released;
  });
  await Promise.race([taken, transaction]);
  return async () => {
    release();
    await transaction;
  };
}
