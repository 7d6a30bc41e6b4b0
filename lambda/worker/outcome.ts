/**
 * How one record ended. Each result has one EMF metric of the same name (see `record-telemetry.ts`).
 *
 * @internal
 */
export type OutcomeResult =
  | 'COMPLETED'
  | 'DUPLICATE'
  | 'STALE_VERSION_SKIPPED'
  | 'RETRYABLE_FAILURE'
  | 'TERMINAL_FAILURE'
  | 'NOT_YET_DUE'
  | 'DEADLINE_DEFERRED';

/**
 * The outcome of one SQS record, decided by `processRecord`.
 *
 * @internal
 */
export interface RecordOutcome {
  readonly messageId: string;
  readonly result: OutcomeResult;
  /** True → deleted by the event source mapping; false → reported in `batchItemFailures`. */
  readonly acknowledged: boolean;
  /** For reported records: the visibility timeout (seconds) to set, or undefined to leave it. */
  readonly visibilitySeconds?: number;
  readonly failureCode?: string;
  /** Failure text safe to log and store (never a payload value). */
  readonly failureMessage?: string;
  readonly quarantined?: boolean;
  readonly hashMismatch?: boolean;
  /** Business attempts recorded in the inbox, when known. */
  readonly attempts?: number;
  readonly messageType?: string;
  readonly idempotencyKey?: string;
  readonly aggregateId?: string;
  readonly correlationId?: string;
  /** The producer's trace id (`1-…-…`, see `recordTrace`), when the message carries a valid trace header. */
  readonly traceId?: string;
  /** SQS ApproximateReceiveCount of this delivery. */
  readonly receiveCount: number;
  readonly processingMs: number;
  /** Time spent in database transactions for this record. */
  readonly dbTransactionMs: number;
  /** Age of the message when it was picked up (now − SentTimestamp). */
  readonly messageAgeMs: number;
}
