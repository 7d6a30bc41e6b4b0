/**
 * The margins the engine keeps before the Lambda timeout. The server-side `statement_timeout` and `lock_timeout`
 * are not set here: they are the database role's defaults (`alter role … in database … set`, applied where the
 * roles are provisioned), because setting them in a transaction (`SET`, `set_config`) pins the connection to
 * RDS Proxy for the rest of the session. What bounds a call by the Lambda time left is the client side
 * (`withinDeadline`) and, for a handler, its budget, which cancels the statements it still runs.
 */
const TIMEOUT_MARGIN_MS = 500;

/**
 * Margin kept between the client-side deadline of a database call and the Lambda timeout: smaller than
 * {@link HANDLER_MARGIN_MS}, so a handler's budget runs out before the call's deadline.
 *
 * @internal
 */
export const CLIENT_DEADLINE_MARGIN_MS = 250;

/**
 * What a handler's budget leaves of the Lambda time: room to roll its transaction back and count the attempt
 * (the bookkeeping runs under {@link CLIENT_DEADLINE_MARGIN_MS}). Past it the handler's running statements are
 * cancelled (see `fenceTransaction`).
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
 * A timeout as `set_config` takes it: whole milliseconds, never negative (`'1500ms'`). Only the scheduled jobs
 * (health, retention) use it, once per run: nothing on the message path sets a parameter (RDS Proxy pins a
 * session that does).
 *
 * @internal
 */
export function settingMs(value: number): string {
  return `${Math.max(0, Math.floor(value))}ms`;
}
