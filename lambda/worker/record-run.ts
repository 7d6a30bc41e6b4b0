import type { SQSRecord } from 'aws-lambda';
import { DatabaseTimeoutError } from '../errors.ts';
import { recordTrace } from '../tracing/record-trace.ts';
import type { RecordTracer } from '../tracing/record-tracer.ts';
import type { BackoffSettings } from './backoff.ts';
import type { Failure } from './classify-error.ts';
import type { BatchState } from './commit-strategy.ts';
import { CLIENT_DEADLINE_MARGIN_MS } from './deadline-margins.ts';
import type { DecodedRecord, UndecodableRecord } from './decode-record.ts';
import { type RecordFacts, type RecordOutcome, recordOutcome, type Verdict, verdicts } from './outcome.ts';
import type { RetryPolicy } from './retry-policy.ts';
import { retryVisibility } from './retry-visibility.ts';
import { withinDeadline } from './within-deadline.ts';

/** The identifiers a record's outcome carries (its log line and metrics). */
export type RecordIds = Pick<
  RecordFacts,
  'messageType' | 'idempotencyKey' | 'aggregateId' | 'correlationId' | 'traceId'
>;

type RecordTrace = ReturnType<typeof recordTrace>;

/**
 * One record's run, shared by every store's record processor: its clock, its producer's trace and subsegment,
 * its store calls (timed and bounded by the time left), and the one way its outcome is built.
 *
 * @internal
 */
export interface RecordRun {
  /** The batch the record runs in: its time left, and whether its database already failed. */
  readonly batch: BatchState;
  /** The producer's trace (AWSTraceHeader or traceparent); undefined when absent or unreadable. */
  readonly trace: RecordTrace;
  /** Milliseconds spent in database calls so far: the store's timed calls add to it. */
  dbTransactionMs: number;
  /** Identifiers the outcome carries: the trace id at first, the envelope's once it is decoded. */
  ids: RecordIds;
  /** The record's outcome from a verdict: its facts (timings, message age, ids) added, its subsegment closed. */
  finish(verdict: Verdict): RecordOutcome;
  /**
   * A retryable verdict with the visibility of its failure (`retryVisibility`): the delay its handler asked for, else
   * the backoff of its code's policy or the default one, at this delivery's receive count.
   */
  retry(failure: Pick<Failure, 'code' | 'message' | 'retryAfterSeconds'>, attempts?: number): Verdict;
  /**
   * Runs one store call, timed into `dbTransactionMs` and bounded by the batch's time left: past it the call is
   * abandoned with a `DatabaseTimeoutError`, `signal` aborted (a client that takes one stops its request) and the
   * store's `abandoned` called (PostgreSQL discards the connections the call may still hold).
   */
  timed<T>(call: (signal: AbortSignal) => Promise<T>): Promise<T>;
  /**
   * The verdict of a failure whose bookkeeping (or quarantine) write failed with `cause`: retryable, so SQS keeps the
   * record (a terminal message is never acknowledged without its quarantine), the failed step and the cause's code
   * added to the message, `quarantineFailed` set when the step was a quarantine; a connection-class cause marks the
   * batch's database down.
   */
  unsettled(
    failure: Pick<Failure, 'code' | 'message'>,
    cause: Failure,
    attempts?: number,
    step?: 'bookkeeping' | 'quarantine',
  ): Verdict;
}

/**
 * Starts a record's run in its batch: reads its trace, opens its subsegment when tracing is on, starts its clock.
 *
 * @internal
 */
export async function startRecordRun(
  record: SQSRecord,
  receiveCount: number,
  deps: {
    readonly now: () => number;
    readonly random: () => number;
    readonly backoff: BackoffSettings;
    readonly retryPolicy: RetryPolicy;
    readonly tracer?: () => Promise<RecordTracer | undefined>;
    /** Called when a store call is given up on at its deadline. */
    readonly abandoned?: () => void;
  },
  batch: BatchState,
): Promise<RecordRun> {
  const startedAt = deps.now();
  const sentAt = Number(record.attributes?.SentTimestamp);
  // A bad trace header is ignored: the record runs without a trace.
  const trace = recordTrace(record);
  const span = deps.tracer ? (await deps.tracer())?.open(record, trace) : undefined;
  const run: RecordRun = {
    batch,
    trace,
    dbTransactionMs: 0,
    ids: { traceId: trace?.traceId },
    finish(verdict) {
      const outcome = recordOutcome(
        {
          messageId: record.messageId,
          receiveCount,
          processingMs: deps.now() - startedAt,
          dbTransactionMs: run.dbTransactionMs,
          messageAgeMs: Number.isFinite(sentAt) && sentAt > 0 ? Math.max(0, startedAt - sentAt) : 0,
          ...run.ids,
        },
        verdict,
      );
      span?.close(outcome);
      return outcome;
    },
    retry(failure, attempts) {
      const visibility = retryVisibility(failure, receiveCount, deps);
      return verdicts.retryable(failure, visibility.seconds, attempts, visibility.source);
    },
    async timed(call) {
      const controller = new AbortController();
      const t = deps.now();
      try {
        return await withinDeadline(
          call(controller.signal),
          batch.remainingMs() - CLIENT_DEADLINE_MARGIN_MS,
          (waited) => {
            controller.abort();
            deps.abandoned?.();
            return new DatabaseTimeoutError(waited);
          },
        );
      } finally {
        run.dbTransactionMs += deps.now() - t;
      }
    },
    unsettled(failure, cause, attempts, step = 'bookkeeping') {
      if (cause.connection) batch.databaseDown = true;
      const verdict = run.retry(
        { code: failure.code, message: `${failure.message} [${step} failed: ${cause.code}]` },
        attempts,
      );
      return step === 'quarantine' ? { ...verdict, quarantineFailed: true } : verdict;
    },
  };
  return run;
}

/**
 * The identifiers of a decoded (or undecodable) record, with its trace id.
 *
 * @internal
 */
export function decodedIds(
  decoded: DecodedRecord | UndecodableRecord,
  traceId: string | undefined,
): RecordIds {
  return {
    traceId,
    messageType: decoded.ok ? decoded.envelope.messageType : decoded.messageType,
    idempotencyKey: decoded.ok ? decoded.envelope.idempotencyKey : decoded.idempotencyKey,
    aggregateId: decoded.envelope?.aggregateId,
    correlationId: decoded.envelope?.correlationId ?? undefined,
  };
}
