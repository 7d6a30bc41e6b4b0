import type { Duration } from 'aws-cdk-lib';
import { formatRetryPolicy, ownCodeProblems, parseRetryPolicy } from '../lambda/retry-policy-setting.ts';
import type { CodeRetryPolicy } from '../lambda/worker/retry-policy.ts';
import { isToken } from './setting-checks.ts';
import type { WorkerSettings } from './worker-settings.ts';

/** The retry policy of one failure code, as the construct's `retryPolicy` takes it. */
export interface RetryPolicyEntry {
  /** Delay cap of the first retry, whole seconds from 0 to 42,300 (0: retried at once). */
  readonly base: Duration;
  /** Upper bound of any delay of the code, whole seconds from `base` to 42,300 (SQS's 12 hours less 15 minutes). */
  readonly max: Duration;
  /**
   * Business attempts after which a failure of the code is terminal (quarantined, or left to the DLQ), 1 to
   * `maxReceiveCount`; a message's own `attemptPolicy.maxBusinessAttempts` still wins.
   * @default the worker's WORKER_MAX_BUSINESS_ATTEMPTS (10)
   */
  readonly maxAttempts?: number;
}

/** Whole seconds of a duration for the text form; a fractional one is kept so the check names it. */
const secondsOf = (duration: Duration): number => duration.toSeconds({ integral: false });

/**
 * Checks the construct's `retryPolicy` and `handlerFailureCodes` with the worker's own rules (the text form is
 * read back through `parseRetryPolicy`, so synth and the cold start refuse the same values) and a `maxAttempts` above
 * `maxReceiveCount` (SQS would move the message to the DLQ first), and gives the worker's variables for them:
 * `WORKER_RETRY_POLICY` and `WORKER_HANDLER_FAILURE_CODES`, none when unset.
 *
 * @internal
 */
export function resolveRetryPolicy(
  props: Pick<WorkerSettings, 'retryPolicy' | 'handlerFailureCodes'>,
  maxReceiveCount: number,
  problems: string[],
): Readonly<Record<string, string>> {
  const ownCodes = [...(props.handlerFailureCodes ?? [])];
  problems.push(...ownCodeProblems(ownCodes, 'handlerFailureCodes'));
  const entries = Object.entries(props.retryPolicy ?? {});
  if (entries.some(([, entry]) => isToken(entry.base) || isToken(entry.max))) {
    problems.push(
      'retryPolicy must be given in plain durations, not tokens: the worker reads them at cold start',
    );
    return {};
  }
  const policy: Record<string, CodeRetryPolicy> = Object.fromEntries(
    entries.map(([code, entry]) => [
      code,
      {
        baseSeconds: secondsOf(entry.base),
        maxSeconds: secondsOf(entry.max),
        ...(entry.maxAttempts !== undefined ? { maxAttempts: entry.maxAttempts } : {}),
      },
    ]),
  );
  const text = formatRetryPolicy(policy);
  const parsed = parseRetryPolicy(text, 'retryPolicy', { codes: ownCodes, setting: 'handlerFailureCodes' });
  problems.push(...parsed.problems);
  for (const [code, entry] of entries) {
    const { maxAttempts } = entry;
    if (maxAttempts !== undefined && !isToken(maxReceiveCount) && maxAttempts > maxReceiveCount) {
      problems.push(
        `retryPolicy ${code}: maxAttempts (${maxAttempts}) must not exceed maxReceiveCount (${maxReceiveCount}): SQS moves the message to the DLQ before its last attempts; raise maxReceiveCount or lower maxAttempts`,
      );
    }
  }
  return {
    ...(text !== '' ? { WORKER_RETRY_POLICY: text } : {}),
    ...(ownCodes.length > 0 ? { WORKER_HANDLER_FAILURE_CODES: ownCodes.join(',') } : {}),
  };
}
