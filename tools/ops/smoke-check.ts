/** The checks of `sqs-worker smoke` (a leaf module: types and constructors, no I/O). */

/** What one check found: `PASS`, `FAIL` (the run exits 1) or `SKIP` (not applicable here, with the reason). */
export type SmokeVerdict = 'PASS' | 'FAIL' | 'SKIP';

/** One row of the smoke table: `CHECK | RESULT | DETAIL`. */
export interface SmokeCheck {
  readonly check: string;
  readonly result: SmokeVerdict;
  /** The figures or the reason; never a payload. */
  readonly detail: string;
}

/** The names of the checks, in the order of the table. */
export const SMOKE_CHECKS = {
  applied: 'canary applied once',
  duplicate: 'its duplicate is a no-op',
  poison: 'poison canary quarantined',
  dlq: 'never-recovering canary reaches the DLQ',
  alarmTopic: 'alarm topic has a confirmed subscription',
  breaker: 'breaker is closed',
  pinning: 'proxy sessions not pinned',
  privileges: 'worker role has no more than it needs',
  cleanup: 'canary state removed',
} as const;

/** A passing check. */
export const pass = (check: string, detail: string): SmokeCheck => ({ check, result: 'PASS', detail });
/** A failed check: `detail` says what was found and what to do. */
export const fail = (check: string, detail: string): SmokeCheck => ({ check, result: 'FAIL', detail });
/** A check that does not apply here: `detail` says why. */
export const skip = (check: string, detail: string): SmokeCheck => ({ check, result: 'SKIP', detail });
