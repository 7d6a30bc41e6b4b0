/** Margin kept between a statement timeout and the Lambda timeout. */
const TIMEOUT_MARGIN_MS = 500;

/**
 * Margin kept between the client-side deadline of a database call and the Lambda timeout: smaller than
 * {@link TIMEOUT_MARGIN_MS}, so a server that answers hits its statement timeout first.
 *
 * @internal
 */
export const CLIENT_DEADLINE_MARGIN_MS = 250;

/**
 * What a handler's budget leaves of the Lambda time: room to roll its transaction back and count the attempt
 * (the bookkeeping runs under {@link CLIENT_DEADLINE_MARGIN_MS}). Equal to the statement timeout's margin, so a
 * statement the handler runs at the end of its budget is cut by the server at the same moment.
 *
 * @internal
 */
export const HANDLER_MARGIN_MS = TIMEOUT_MARGIN_MS;

/**
 * Per-batch mode: Lambda time kept back from the records for the batch's own end (the deferred COMPLETED rows and
 * the COMMIT). The records see this much less time left, so the last one to start still leaves it.
 *
 * @internal
 */
export const BATCH_COMMIT_RESERVE_MS = 500;

/**
 * The timeouts of one inbox transaction, in milliseconds.
 *
 * @internal
 */
export interface TransactionTimeouts {
  /** Statement timeout: the configured one, bounded by the Lambda time left (at least 100 ms). */
  readonly statementTimeoutMs: number;
  /** Lock wait of the inbox claim (a copy of the message in flight elsewhere). */
  readonly claimLockTimeoutMs: number;
  /** Lock wait of the domain mutation. */
  readonly lockTimeoutMs: number;
}

/**
 * The timeouts of a transaction that starts now: every wait bounded by the Lambda time left, so a stuck
 * statement fails as retryable instead of being cut by the Lambda timeout (which would fail the whole batch).
 *
 * @internal
 */
export function transactionTimeouts(
  configured: TransactionTimeouts,
  remainingMs: number,
): TransactionTimeouts {
  const statementTimeoutMs = Math.max(
    100,
    Math.min(configured.statementTimeoutMs, remainingMs - TIMEOUT_MARGIN_MS),
  );
  return {
    statementTimeoutMs,
    claimLockTimeoutMs: Math.min(configured.claimLockTimeoutMs, statementTimeoutMs),
    lockTimeoutMs: Math.min(configured.lockTimeoutMs, statementTimeoutMs),
  };
}

/**
 * A timeout as `set_config` takes it: whole milliseconds, never negative (`'1500ms'`).
 *
 * @internal
 */
export function settingMs(value: number): string {
  return `${Math.max(0, Math.floor(value))}ms`;
}
