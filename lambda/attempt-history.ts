/**
 * The attempt history an inbox entry keeps (both stores: `worker_inbox.attempt_history`, the DynamoDB inbox item's
 * `attemptHistory`), as River's `errors` and Oban's `errors` keep one entry per attempt of a job. A leaf module:
 * constants and types only. docs/operations.md ("Attempt history") states what an operator reads.
 */

/**
 * Attempts an inbox entry keeps: the latest ones, oldest first. A key retried for days keeps its last 20 attempts,
 * so the entry stays small (an attempt is ~200 bytes: about 4 KB at most, far inside DynamoDB's 400 KB item).
 */
export const ATTEMPT_HISTORY_LIMIT = 20;

/**
 * How an attempt ended: its effect committed, the failure the store recorded, or refused because an operator
 * cancelled the key (`inbox cancel`: the copy is quarantined, never applied).
 */
export type AttemptOutcome = 'COMPLETED' | 'FAILED_RETRYABLE' | 'FAILED_TERMINAL' | 'CANCELLED';

/**
 * One attempt of a key: a delivery that ran its handler (or was decided terminal) under the inbox claim. Duplicates,
 * deliveries answered "in progress elsewhere" and a reused key's hash mismatch are not attempts of the key's request
 * and are not kept. No failure message and no payload: the entry's last failure message stays on the entry itself.
 */
export interface AttemptRecord {
  /** ISO time the outcome was written. */
  readonly at: string;
  readonly outcome: AttemptOutcome;
  /** The failure code of a failed attempt (absent on a completion). */
  readonly code?: string;
  /** The worker version that ran the attempt (`config.workerVersion`), absent when the worker named none. */
  readonly version?: string;
  /** SQS messageId of the delivery. */
  readonly messageId?: string;
  /** Business attempt number of the entry (`receive_count` / `attempts` at the time; re-arming restarts it). */
  readonly attempt?: number;
  /** SQS ApproximateReceiveCount of the delivery. */
  readonly receiveCount?: number;
}
