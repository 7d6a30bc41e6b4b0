import { FailedChecksError } from '../../ops/errors.ts';
import { createMemoryOutput } from '../../ops/memory-output.ts';
import type { OpsOutput } from '../../ops/output.ts';

/**
 * Runs an ops function whose result may come with failures in it (a bulk release that skipped entries, a canary that
 * stopped on failures: `FailedChecksError`, thrown after the result was printed): the result either way, and the
 * failure's sentence when there was one. Any other error is thrown as it is.
 */
export async function resultWithChecks<T>(
  run: (out: OpsOutput) => Promise<T>,
): Promise<{ result: T; failed?: string }> {
  const out = createMemoryOutput({ json: true });
  try {
    return { result: await run(out) };
  } catch (error) {
    if (!(error instanceof FailedChecksError)) throw error;
    return { result: out.lastJson<T>(), failed: error.message };
  }
}
