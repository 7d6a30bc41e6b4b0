import { DatabaseTimeoutError } from '../errors.ts';

/**
 * Waits for `work` at most `ms` milliseconds, then rejects with {@link DatabaseTimeoutError}. postgres.js has
 * no client-side timeout: a connection whose server stopped answering, or a pool reconnecting to a server that
 * refuses it, waits without end. Server-side `statement_timeout` cannot help when the server is not there, so
 * the engine bounds every database call by the Lambda time left. The abandoned call may still finish later;
 * if it commits, the redelivery is a duplicate no-op. `timeoutError` makes the error (a handler's own budget
 * rejects with `HandlerTimeoutError`).
 *
 * @internal
 */
export async function withinDeadline<T>(
  work: Promise<T>,
  ms: number,
  timeoutError: (waitedMs: number) => Error = (waitedMs) => new DatabaseTimeoutError(waitedMs),
): Promise<T> {
  const waited = Math.max(0, Math.floor(ms));
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeoutError(waited)), waited);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
    // The abandoned call's own failure must not surface as an unhandled rejection.
    work.catch(() => {});
  }
}
