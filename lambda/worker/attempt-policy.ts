import type { Failure } from './classify-error.ts';
import type { AttemptPolicy } from './envelope.ts';
import type { RetryPolicy } from './retry-policy.ts';

/**
 * Worker-wide defaults for the envelope's attempt policy.
 *
 * @internal
 */
export interface AttemptDefaults {
  /** Used when the envelope gives no `maxBusinessAttempts` and the failure's code has no `maxAttempts`. */
  readonly maxBusinessAttempts: number;
  /** Retry policies by failure code: a code's `maxAttempts` replaces `maxBusinessAttempts` for its failures. */
  readonly retryPolicy?: RetryPolicy;
}

/**
 * Milliseconds until the message may be processed by its `notBefore`: 0 or less when it is due now.
 *
 * @internal
 */
export function msUntilDue(policy: AttemptPolicy | null | undefined, nowMs: number): number {
  return policy?.notBefore ? Date.parse(policy.notBefore) - nowMs : 0;
}

/**
 * Turns a retryable failure terminal when the message's business retry budget is spent (pattern document
 * §14): its code is in `terminalAfterCodes`, `attempts` reached `maxBusinessAttempts` (the envelope's, else its
 * code's retry policy `maxAttempts`, else the worker's), or `retryableUntil` has passed. A terminal failure stays terminal. The returned message says which rule fired.
 *
 * @param attempts business attempts including the one that just failed (`worker_inbox.receive_count`).
 *
 * @internal
 */
export function applyAttemptPolicy(
  failure: Failure,
  input: { policy: AttemptPolicy | null | undefined; attempts: number; now: Date; defaults: AttemptDefaults },
): Failure {
  if (!failure.retryable) return failure;
  const policy = input.policy ?? {};
  if (policy.terminalAfterCodes?.includes(failure.code)) {
    return {
      ...failure,
      retryable: false,
      message: `${failure.message} [terminal: code listed in terminalAfterCodes]`,
    };
  }
  const codePolicy = input.defaults.retryPolicy;
  const codeMax =
    codePolicy && Object.hasOwn(codePolicy, failure.code) ? codePolicy[failure.code]?.maxAttempts : undefined;
  const max = policy.maxBusinessAttempts ?? codeMax ?? input.defaults.maxBusinessAttempts;
  if (input.attempts >= max) {
    const rule =
      policy.maxBusinessAttempts == null && codeMax !== undefined
        ? `maxAttempts ${max} of the retry policy of ${failure.code}`
        : `maxBusinessAttempts ${max}`;
    return {
      ...failure,
      retryable: false,
      message: `${failure.message} [terminal: attempt ${input.attempts} of ${rule}]`,
    };
  }
  if (policy.retryableUntil && Date.parse(policy.retryableUntil) <= input.now.getTime()) {
    return {
      ...failure,
      retryable: false,
      message: `${failure.message} [terminal: retryableUntil ${policy.retryableUntil} passed]`,
    };
  }
  return failure;
}
