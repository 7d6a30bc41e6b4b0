/**
 * Longest visibility the worker asks for: SQS refuses a visibility that ends more than 12 hours (43,200 s)
 * after the message was received, so 15 minutes (the longest a Lambda invocation can have spent on it) are
 * kept in hand: 42,300 s.
 *
 * @internal
 */
export const MAX_VISIBILITY_SECONDS = 42_300;

/** Backoff settings of a worker. */
export interface BackoffSettings {
  /** Delay cap of the first retry, in seconds. */
  readonly baseSeconds: number;
  /** Upper bound of any delay, in seconds (at most 12 hours). */
  readonly maxSeconds: number;
}

/**
 * Exponential backoff with full jitter for a retryable failure:
 * `random(0, min(maxSeconds, baseSeconds × 2^(receiveCount − 1)))`, whole seconds, so that many messages
 * failing together do not come back together (no retry storms).
 *
 * @param receiveCount SQS ApproximateReceiveCount of the delivery that failed (1 for the first).
 * @param random a source of numbers in [0, 1); injectable for tests.
 * @returns whole seconds, at most {@link MAX_VISIBILITY_SECONDS}.
 *
 * @internal
 */
export function backoffSeconds(
  receiveCount: number,
  settings: BackoffSettings,
  random: () => number = Math.random,
): number {
  const exponent = Math.max(0, Math.min(30, receiveCount - 1));
  const cap = Math.min(settings.maxSeconds, MAX_VISIBILITY_SECONDS, settings.baseSeconds * 2 ** exponent);
  return Math.min(Math.floor(random() * (cap + 1)), cap);
}
