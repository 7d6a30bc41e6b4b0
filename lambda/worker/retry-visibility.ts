import { type BackoffSettings, backoffSeconds, MAX_VISIBILITY_SECONDS } from './backoff.ts';
import type { RetryPolicy } from './retry-policy.ts';

/**
 * Where a retry's visibility came from, on the record's log line (`visibilitySource`): `handler` — the handler's
 * `RetryableError` asked for it (`retryAfterSeconds`); `policy` — the backoff of its code's retry policy; `default` —
 * the worker's default backoff.
 */
export type VisibilitySource = 'handler' | 'policy' | 'default';

/** A retry's visibility and where it came from. */
export interface RetryVisibility {
  readonly seconds: number;
  readonly source: VisibilitySource;
}

/**
 * The visibility of a retryable failure's message: the delay the handler asked for, rounded up to whole seconds and
 * capped by the code's (or the default curve's) `maxSeconds` and {@link MAX_VISIBILITY_SECONDS}; else the backoff of
 * the code's policy; else the default backoff — each curve with full jitter over this delivery's receive count.
 *
 * @param failure its code, and the delay its handler asked for, if any.
 *
 * @internal
 */
export function retryVisibility(
  failure: { readonly code: string; readonly retryAfterSeconds?: number },
  receiveCount: number,
  settings: {
    readonly backoff: BackoffSettings;
    readonly retryPolicy: RetryPolicy;
    readonly random: () => number;
  },
): RetryVisibility {
  const own = Object.hasOwn(settings.retryPolicy, failure.code)
    ? settings.retryPolicy[failure.code]
    : undefined;
  const curve = own ?? settings.backoff;
  const requested = failure.retryAfterSeconds;
  if (requested !== undefined && Number.isFinite(requested) && requested >= 0) {
    const seconds = Math.min(Math.ceil(requested), curve.maxSeconds, MAX_VISIBILITY_SECONDS);
    return { seconds, source: 'handler' };
  }
  return {
    seconds: backoffSeconds(receiveCount, curve, settings.random),
    source: own ? 'policy' : 'default',
  };
}
