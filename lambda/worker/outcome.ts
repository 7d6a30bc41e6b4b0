import type { SQSRecord } from 'aws-lambda';
import { recordTrace } from '../tracing/record-trace.ts';
import type { DuplicateCopy } from './record-store.ts';
import type { VisibilitySource } from './retry-visibility.ts';

/** How one record ended. Each result has one EMF metric of the same name (see `record-telemetry.ts`). */
export type OutcomeResult =
  | 'COMPLETED'
  | 'DUPLICATE'
  | 'STALE_VERSION_SKIPPED'
  | 'RETRYABLE_FAILURE'
  | 'TERMINAL_FAILURE'
  | 'NOT_YET_DUE'
  | 'DEADLINE_DEFERRED';

/**
 * The outcome of one SQS record, decided by the engine (`batch-engine.ts`) and its commit strategy. Built only by
 * the factories of this file ({@link recordOutcome} with a {@link verdicts} entry), so every path sets the same
 * fields the same way.
 */
export interface RecordOutcome {
  readonly messageId: string;
  readonly result: OutcomeResult;
  /** True → deleted by the event source mapping; false → reported in `batchItemFailures`. */
  readonly acknowledged: boolean;
  /** For reported records: the visibility timeout (seconds) to set, or undefined to leave it. */
  readonly visibilitySeconds?: number;
  /**
   * For a retryable failure: where `visibilitySeconds` came from — `handler` (its `RetryableError`'s
   * `retryAfterSeconds`), `policy` (its code's retry policy) or `default` (the worker's backoff).
   */
  readonly visibilitySource?: VisibilitySource;
  readonly failureCode?: string;
  /** Failure text safe to log and store (never a payload value). */
  readonly failureMessage?: string;
  readonly quarantined?: boolean;
  /**
   * A terminal message whose quarantine could not be written (the store failed): reported so SQS keeps it, counted
   * (`QuarantineFailed`, alarmed), and left to the DLQ if the store keeps failing.
   */
  readonly quarantineFailed?: boolean;
  readonly hashMismatch?: boolean;
  /** A duplicate's kind, when the store told it: the same SQS message again, or a resend (`DuplicateCopy`). */
  readonly duplicateCopy?: DuplicateCopy;
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

/**
 * What is known of a record whatever its result: identity, delivery count, timings, envelope identifiers.
 *
 * @internal
 */
export type RecordFacts = Pick<
  RecordOutcome,
  | 'messageId'
  | 'receiveCount'
  | 'processingMs'
  | 'dbTransactionMs'
  | 'messageAgeMs'
  | 'messageType'
  | 'idempotencyKey'
  | 'aggregateId'
  | 'correlationId'
  | 'traceId'
>;

/**
 * What was decided about a record: its result and what follows from it (acknowledgement, visibility, failure).
 * Made by {@link verdicts}.
 *
 * @internal
 */
export type Verdict = Omit<RecordOutcome, keyof RecordFacts>;

/** A failure as outcomes carry it: a stable code and a message safe to log. */
interface FailureText {
  readonly code: string;
  readonly message: string;
}

/**
 * The verdicts a record can get, one factory per kind. Store-free: a commit strategy of any store decides its
 * records with these.
 *
 * @internal
 */
export const verdicts = {
  /** The effect committed (`stale`: the handler found a newer version and changed nothing). */
  completed(attempts: number | undefined, stale = false): Verdict {
    return { result: stale ? 'STALE_VERSION_SKIPPED' : 'COMPLETED', acknowledged: true, attempts };
  },
  /** The key was already COMPLETED with this request: acknowledged, nothing applied. */
  duplicate(attempts: number | undefined, copy?: DuplicateCopy): Verdict {
    return { result: 'DUPLICATE', acknowledged: true, attempts, ...(copy ? { duplicateCopy: copy } : {}) };
  },
  /** Reported, visible again after `visibilitySeconds` (the backoff; `source`: where it came from). */
  retryable(
    failure: FailureText,
    visibilitySeconds: number | undefined,
    attempts?: number,
    source?: VisibilitySource,
  ): Verdict {
    return {
      result: 'RETRYABLE_FAILURE',
      acknowledged: false,
      visibilitySeconds,
      ...(source !== undefined && visibilitySeconds !== undefined ? { visibilitySource: source } : {}),
      failureCode: failure.code,
      failureMessage: failure.message,
      attempts,
    };
  },
  /** Terminal: acknowledged when quarantined (its quarantine row committed), else reported until the DLQ. */
  terminal(
    failure: FailureText,
    details: { quarantined: boolean; attempts: number | undefined; hashMismatch?: boolean },
  ): Verdict {
    return {
      result: 'TERMINAL_FAILURE',
      acknowledged: details.quarantined,
      quarantined: details.quarantined,
      failureCode: failure.code,
      failureMessage: failure.message,
      attempts: details.attempts,
      ...(details.hashMismatch ? { hashMismatch: true } : {}),
    };
  },
  /** Its `notBefore` is `waitSeconds` away: reported, visible again then (capped by the caller). */
  notYetDue(notBefore: string | undefined, waitSeconds: number, visibilitySeconds: number): Verdict {
    return {
      result: 'NOT_YET_DUE',
      acknowledged: false,
      visibilitySeconds,
      failureCode: 'NOT_YET_DUE',
      failureMessage: `notBefore ${notBefore} is ${waitSeconds} s away`,
    };
  },
  /** Not started because the batch's time is nearly up: reported, visible again at once. */
  deadlineDeferred(leftMs: number, guardMs: number): Verdict {
    return {
      result: 'DEADLINE_DEFERRED',
      acknowledged: false,
      visibilitySeconds: 0,
      failureCode: 'DEADLINE_DEFERRED',
      failureMessage: `not started: ${leftMs} ms left for a handler, guard ${guardMs} ms`,
    };
  },
  /**
   * FIFO: not run because an earlier message of its group failed; it takes the blocker's visibility, so the
   * group comes back together, in order.
   */
  fifoBlocked(blocker: RecordOutcome | undefined): Verdict {
    return {
      result: 'RETRYABLE_FAILURE',
      acknowledged: false,
      visibilitySeconds: blocker?.visibilitySeconds,
      failureCode: 'FIFO_GROUP_BLOCKED',
      failureMessage: `not run: an earlier message of its group failed (${blocker?.failureCode ?? 'unknown'})`,
    };
  },
} as const;

/**
 * SQS ApproximateReceiveCount of a record (1 when missing): parsed once per record, by the engine.
 *
 * @internal
 */
export function receiveCountOf(record: SQSRecord): number {
  return Number(record.attributes?.ApproximateReceiveCount) || 1;
}

/**
 * The facts of a record that never ran (deferred, blocked): no timings; its producer's trace id, for its log line.
 *
 * @internal
 */
export function unstartedFacts(record: SQSRecord, receiveCount: number): RecordFacts {
  return {
    messageId: record.messageId,
    receiveCount,
    processingMs: 0,
    dbTransactionMs: 0,
    messageAgeMs: 0,
    traceId: recordTrace(record)?.traceId,
  };
}

/**
 * The one place a {@link RecordOutcome} is assembled: a record's facts and its verdict.
 *
 * @internal
 */
export function recordOutcome(facts: RecordFacts, verdict: Verdict): RecordOutcome {
  return { ...facts, ...verdict };
}
