import { MAX_VISIBILITY_SECONDS } from './backoff.ts';

/**
 * The retry policy of one failure code: its own backoff curve (the same full-jitter curve as the worker's default,
 * `random(0, min(maxSeconds, baseSeconds × 2^(receiveCount − 1)))`) and, optionally, its own attempt budget.
 */
export interface CodeRetryPolicy {
  /** Delay cap of the first retry, whole seconds, 0 to {@link MAX_VISIBILITY_SECONDS} (0: retried at once). */
  readonly baseSeconds: number;
  /** Upper bound of any delay of this code, whole seconds, `baseSeconds` to {@link MAX_VISIBILITY_SECONDS}. */
  readonly maxSeconds: number;
  /**
   * Business attempts after which a failure of this code is terminal (quarantined, or left to the DLQ), 1 to 1000,
   * in place of the worker's `maxBusinessAttempts`; a message's own `attemptPolicy.maxBusinessAttempts` still wins.
   * @default the worker's maxBusinessAttempts
   */
  readonly maxAttempts?: number;
}

/**
 * Retry policies by failure code (`WORKER_RETRY_POLICY`, the construct's `retryPolicy`): a retryable failure of a
 * listed code backs off on its code's curve; any other code on the worker's default curve (`backoff`).
 */
export type RetryPolicy = Readonly<Record<string, CodeRetryPolicy>>;

/** Most business attempts a code's policy may allow (as `WORKER_MAX_BUSINESS_ATTEMPTS`). */
export const MAX_POLICY_ATTEMPTS = 1000;

const wholeIn = (value: number, min: number, max: number): boolean =>
  Number.isInteger(value) && value >= min && value <= max;

/**
 * The problems of a retry policy's numbers, one message each naming the code, the value and the fix; empty when it
 * is valid. Which codes may be named is the caller's to check (`parseRetryPolicy`: the toolkit's codes and the
 * worker's own).
 *
 * @param where what the policy is called where it was given (`WORKER_RETRY_POLICY`, `retryPolicy`).
 *
 * @internal
 */
export function retryPolicyProblems(policy: RetryPolicy, where: string): string[] {
  const problems: string[] = [];
  const range = `a whole number of seconds from 0 to ${MAX_VISIBILITY_SECONDS}`;
  const why = `${MAX_VISIBILITY_SECONDS} s is SQS's 12-hour visibility maximum less the 15 minutes a Lambda run may have held the message`;
  for (const [code, entry] of Object.entries(policy)) {
    const { baseSeconds, maxSeconds, maxAttempts } = entry;
    if (!wholeIn(baseSeconds, 0, MAX_VISIBILITY_SECONDS)) {
      problems.push(
        `${where} ${code}: baseSeconds must be ${range} (given ${baseSeconds}): ${why}; write one in that range`,
      );
    }
    if (!wholeIn(maxSeconds, 0, MAX_VISIBILITY_SECONDS)) {
      problems.push(
        `${where} ${code}: maxSeconds must be ${range} (given ${maxSeconds}): ${why}; write one in that range`,
      );
    } else if (wholeIn(baseSeconds, 0, MAX_VISIBILITY_SECONDS) && maxSeconds < baseSeconds) {
      problems.push(
        `${where} ${code}: maxSeconds (${maxSeconds}) must not be below baseSeconds (${baseSeconds}); raise the maximum or lower the base`,
      );
    }
    if (maxAttempts !== undefined && !wholeIn(maxAttempts, 1, MAX_POLICY_ATTEMPTS)) {
      problems.push(
        `${where} ${code}: maxAttempts must be a whole number from 1 to ${MAX_POLICY_ATTEMPTS} (given ${maxAttempts}); leave it out to use the worker's maxBusinessAttempts`,
      );
    }
  }
  return problems;
}
