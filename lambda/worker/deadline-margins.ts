/**
 * The margins the engine keeps before the runtime's deadline (the Lambda timeout). What bounds a store call by the
 * time left is the client side (`withinDeadline`) and, for a handler, its budget, which abandons (PostgreSQL:
 * cancels) what it still runs.
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
