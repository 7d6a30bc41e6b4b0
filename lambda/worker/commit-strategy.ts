import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { SQSRecord } from 'aws-lambda';
import type { RecordTracer } from '../tracing/record-tracer.ts';
import type { TerminalPolicy } from '../types.ts';
import type { AttemptDefaults } from './attempt-policy.ts';
import type { BackoffSettings } from './backoff.ts';
import type { DecodedRecord, UndecodableRecord } from './decode-record.ts';
import type { HandlerRegistry } from './handler-registry.ts';
import type { RecordOutcome } from './outcome.ts';
import type { RecordStore } from './record-store.ts';
import type { PayloadReader } from './resolve-payload.ts';
import type { RetryPolicy } from './retry-policy.ts';

/**
 * State shared by the records of one batch.
 *
 * @internal
 */
export interface BatchState {
  /** Set after a connection-class failure: the rest of the batch is reported without touching the database. */
  databaseDown: boolean;
  /** Milliseconds left for the records (the batch's budget less what the commit strategy keeps back). */
  remainingMs(): number;
}

/**
 * One record of a batch as the engine prepared it: decoded once, its receive count parsed once.
 *
 * @internal
 */
export interface BatchRecord {
  readonly record: SQSRecord;
  /** SQS ApproximateReceiveCount (1 when missing). */
  readonly receiveCount: number;
  /** The record decoded and routed (`decode-record.ts`): pure, no I/O. */
  readonly decoded: DecodedRecord | UndecodableRecord;
}

/**
 * Decides the outcome of one record. Must not throw: every failure ends in an outcome.
 *
 * @internal
 */
export type RecordProcessor = (item: BatchRecord) => Promise<RecordOutcome>;

/**
 * What the engine hands a commit strategy for one batch.
 *
 * @internal
 */
export interface CommitBatch {
  /** The records, in the batch's order. */
  readonly records: readonly BatchRecord[];
  /** A `.fifo` queue: the engine runs records one at a time, per group in order. */
  readonly fifo: boolean;
  readonly state: BatchState;
  /** Milliseconds left for the whole batch, commit included (no reserve taken off). */
  totalRemainingMs(): number;
  /** The deadline guard now: a record is not started with less than this left. */
  guardMs(): number;
  /**
   * Runs the engine's record template (`process-record.ts`) over the records with the store's primitives `records`
   * — at most `recordConcurrency` at once when the strategy is `concurrent`, one at a time otherwise; FIFO per group
   * in order, a group stopped at its first record that is not acknowledged (its later records get
   * `FIFO_GROUP_BLOCKED`); a record not started when the deadline guard says there is no time left
   * (`DEADLINE_DEFERRED`) — and sets each record's outcome in `outcomes` (by SQS messageId) as it settles. Never
   * throws. A strategy that commits per batch calls it inside its batch transaction, with the primitives of that
   * transaction (and again for a redo).
   */
  run<Unit, Claim>(records: RecordStore<Unit, Claim>, outcomes: Map<string, RecordOutcome>): Promise<void>;
}

/**
 * How a batch's records are committed to the store: what a store (`store.ts`) gives the engine for each worker.
 *
 * The engine (`batch-engine.ts`) owns everything store-free — decoding, routing, the deadline guard, record
 * concurrency, FIFO ordering, the decision tree of a record (`process-record.ts`), telemetry, the `onOutcome` hook —
 * and hands each batch to the strategy, which runs it with the store's record primitives (`record-store.ts`) and
 * commits around `batch.run(records, outcomes)`. A store that commits each record alone uses `inlineCommit`
 * (PostgreSQL per message, `lambda/stores/postgres/commit-per-message.ts`; DynamoDB,
 * `lambda/stores/dynamodb/commit-dynamodb.ts`); PostgreSQL per batch (`commit-per-batch.ts`: one transaction per
 * batch, a savepoint per record when needed) opens its batch transaction, claims the batch's rows and reads its
 * payloads first, and gives the records the primitives of that transaction (its batch completer).
 *
 * A strategy must guarantee:
 * - an outcome for every record of the batch, keyed by SQS messageId, the final one (an attempt it rolled back and
 *   redid leaves no outcome behind);
 * - `acknowledged: true` only for a record whose effect — or, for a terminal one, its quarantine record — is
 *   durably committed when `commit` resolves; when a shared commit fails, every record that touched the store is
 *   reported (retryable);
 * - it never throws for a record's failure, and never changes a message's visibility (the runtime does);
 * - after a connection-class failure it sets `batch.state.databaseDown` and does not touch the store again for
 *   the rest of the batch (records are reported retryable `DATABASE_UNAVAILABLE`);
 * - every store call is bounded by the time left (`batch.state.remainingMs()`, `within-deadline.ts`).
 *
 * @internal
 */
export interface CommitStrategy {
  /** Whether records may run at once (up to `recordConcurrency`); false runs them one after another. */
  readonly concurrent: boolean;
  /**
   * Whether the outcomes it sets become final only when `commit` resolves (one transaction for the batch): the
   * engine then never calls `onRecordSettled`. False when a record's outcome is final the moment it is set.
   */
  readonly settlesAtCommit: boolean;
  /** Milliseconds of the batch's budget kept back for the strategy's own commit (records see that much less). */
  readonly commitReserveMs: number;
  /** Runs and commits one batch; resolves with every record's outcome by SQS messageId. */
  commit(batch: CommitBatch): Promise<ReadonlyMap<string, RecordOutcome>>;
}

/**
 * The store-free settings and collaborators every strategy gets, resolved once by the engine.
 *
 * @internal
 */
export interface EngineSettings {
  /** Inbox namespace of this worker. */
  readonly consumer: string;
  /** The worker code's version (`EngineOptions.workerVersion`): kept on the inbox and quarantine entries it writes. */
  readonly workerVersion: string;
  readonly registry: HandlerRegistry;
  readonly terminalPolicy: TerminalPolicy;
  readonly attemptDefaults: AttemptDefaults;
  readonly backoff: BackoffSettings;
  /** Retry policies by failure code; a code not listed backs off on `backoff`. */
  readonly retryPolicy: RetryPolicy;
  readonly now: () => number;
  readonly random: () => number;
  /** Reads `payloadRef` payloads (see `resolve-payload.ts`). */
  readonly payloads: PayloadReader;
  /** When tracing is on: gives the tracer that opens a subsegment per record (see `record-tracer.ts`). */
  readonly tracer?: () => Promise<RecordTracer | undefined>;
  readonly logger: Logger;
  readonly metrics: Metrics;
}
