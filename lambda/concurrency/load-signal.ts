import type { OutcomeResult } from '../worker/outcome.ts';

/**
 * What one record's outcome says about the database's load:
 * - `contention`: the store refused to wait or to serialize (lock timeout, deadlock, serialization failure, a
 *   DynamoDB transaction conflict): more records at once make it worse;
 * - `throttle`: the store refused the rate (DynamoDB throttling, PostgreSQL's or the proxy's connection limit);
 * - `unavailable`: the connection failed (refused, reset, timed out): the breaker's signal, and a reason to send less;
 * - `slow`: a statement ran out of its time (statement timeout, query cancelled);
 * - `ok`: the record's transaction ran (completed, duplicate, stale version): its transaction time is a sample;
 * - `ignored`: nothing about the database — a business failure (terminal codes, poison, a handler's own retryable
 *   error), a payload that could not be read, a record not yet due or deferred.
 */
export type LoadSignal = 'contention' | 'throttle' | 'unavailable' | 'slow' | 'ok' | 'ignored';

/** The failure codes of each signal of load; every other code is `ignored`. */
const SIGNAL_OF_CODE: Readonly<Record<string, Exclude<LoadSignal, 'ok' | 'ignored'>>> = {
  LOCK_TIMEOUT: 'contention',
  DEADLOCK_DETECTED: 'contention',
  SERIALIZATION_FAILURE: 'contention',
  TRANSACTION_CONFLICT: 'contention',
  THROTTLED: 'throttle',
  TOO_MANY_CONNECTIONS: 'throttle',
  DATABASE_UNAVAILABLE: 'unavailable',
  DYNAMODB_UNAVAILABLE: 'unavailable',
  CONNECT_TIMEOUT: 'unavailable',
  CONNECTION_CLOSED: 'unavailable',
  CONNECTION_EXCEPTION: 'unavailable',
  CANNOT_CONNECT_NOW: 'unavailable',
  ADMIN_SHUTDOWN: 'unavailable',
  CRASH_SHUTDOWN: 'unavailable',
  NETWORK_ERROR: 'unavailable',
  DATABASE_TIMEOUT: 'slow',
  QUERY_CANCELED: 'slow',
};

/** The results whose transaction ran to its end: their transaction time is a sample of the database's latency. */
const SAMPLED_RESULTS: ReadonlySet<OutcomeResult> = new Set([
  'COMPLETED',
  'DUPLICATE',
  'STALE_VERSION_SKIPPED',
]);

/** The signals that ask for fewer records in flight. */
export const OVERLOAD_SIGNALS: ReadonlySet<LoadSignal> = new Set([
  'contention',
  'throttle',
  'unavailable',
  'slow',
]);

/**
 * The {@link LoadSignal} of one record's outcome. Only a retryable failure can be a signal of load: a terminal
 * failure is the message's fault, whatever its code.
 */
export function loadSignalOf(outcome: {
  readonly result: OutcomeResult;
  readonly failureCode?: string;
}): LoadSignal {
  if (SAMPLED_RESULTS.has(outcome.result)) return 'ok';
  if (outcome.result !== 'RETRYABLE_FAILURE' || outcome.failureCode === undefined) return 'ignored';
  return SIGNAL_OF_CODE[outcome.failureCode] ?? 'ignored';
}
