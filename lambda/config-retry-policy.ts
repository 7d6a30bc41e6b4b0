import type { ConfigVariables } from './config-variables.ts';
import { ownCodeProblems, parseRetryPolicy } from './retry-policy-setting.ts';
import type { RetryPolicy } from './worker/retry-policy.ts';

/**
 * `WORKER_RETRY_POLICY` (`CODE=base:max[:attempts]`, comma-separated), checked against the toolkit's failure codes and
 * the worker's own (`WORKER_HANDLER_FAILURE_CODES`, comma-separated); every problem is added to `problems`.
 *
 * @internal
 */
export function readRetryPolicy(e: ConfigVariables, problems: string[]): RetryPolicy {
  const ownCodes = (e.WORKER_HANDLER_FAILURE_CODES ?? '')
    .split(',')
    .map((code) => code.trim())
    .filter((code) => code !== '');
  problems.push(...ownCodeProblems(ownCodes, 'WORKER_HANDLER_FAILURE_CODES'));
  const parsed = parseRetryPolicy(e.WORKER_RETRY_POLICY, 'WORKER_RETRY_POLICY', {
    codes: ownCodes,
    setting: 'WORKER_HANDLER_FAILURE_CODES',
  });
  problems.push(...parsed.problems);
  return parsed.policy;
}
