import type { SQSRecord } from 'aws-lambda';
import type { Failure } from './classify-error.ts';
import type { DecodedRecord, UndecodableRecord } from './decode-record.ts';
import type { QuarantineReason } from './quarantine-reason.ts';

/**
 * What a store's primitives get of the record they serve: its store calls, timed into the record's
 * `dbTransactionMs` and bounded by the batch's time left (`RecordRun.timed`), and that time left.
 *
 * @internal
 */
export interface StoreCalls {
  timed<T>(call: (signal: AbortSignal) => Promise<T>): Promise<T>;
  /** Milliseconds left for the batch's records. */
  remainingMs(): number;
}

/**
 * A referenced payload as a store reads it for the template: read and verified, or found unnecessary to read
 * (`completedAlready`: the key is COMPLETED with this request, the object was not read and may even be gone), or
 * failed. See `readReferencedPayload`.
 *
 * @internal
 */
export type ReferencedPayload =
  | { readonly ok: true; readonly decoded: DecodedRecord; readonly completedAlready: boolean }
  | { readonly ok: false; readonly failure: Failure };

/**
 * What the template asks a claim for.
 *
 * @internal
 */
export interface ClaimRequest {
  readonly record: SQSRecord;
  /** The record as decoded: its envelope, request hash and handler. */
  readonly decoded: DecodedRecord;
  /** The message its handler gets: `decoded` with its referenced payload read (still `pendingRef` when not). */
  readonly message: DecodedRecord;
  /** The producer's trace id the delivery carries, if any (kept on the inbox row or item). */
  readonly traceId: string | undefined;
  /**
   * The key was read COMPLETED with this request before its payload was read (`message.pendingRef` stays set). A
   * store may answer the claim from that read (a duplicate), or claim to confirm it.
   */
  readonly knownCompleted: boolean;
}

/**
 * What a claim counted of this delivery.
 *
 * @internal
 */
export interface GateCount {
  /** Business attempts so far, this delivery included; undefined when the store did not count this delivery. */
  readonly attempts?: number;
  /**
   * True when the count outlives a failed attempt (a lease taken, a row claimed for the whole batch): the failure
   * bookkeeping then counts nothing more. False when the attempt's rollback takes the count back with it.
   */
  readonly durable?: boolean;
}

/**
 * What a duplicate is, where the store can tell: the same SQS message again (`REDELIVERY`: its messageId is the
 * key's last one) or a new message with the same key (`RESEND`: the producer sent again).
 *
 * @internal
 */
export type DuplicateCopy = 'REDELIVERY' | 'RESEND';

/**
 * The one answer of a claim (the gate), which the template decides on:
 * - `new` / `retry`: this delivery holds the key (its first delivery, or one after a failed attempt): run the
 *   handler, then complete with `claim`, the store's own token (a row lock, a lease);
 * - `duplicate`: the key is COMPLETED with this request: acknowledged, nothing applied (`copy`: what kind of copy,
 *   when the store tells);
 * - `terminal`: the key failed terminally before (`failureCode`): it stays terminal;
 * - `cancelled`: an operator cancelled the key (`sqs-worker inbox cancel`): terminal `CANCELLED`, never applied;
 * - `hashMismatch`: the key belongs to another request (`status`: the key's status): terminal
 *   `IDEMPOTENCY_HASH_MISMATCH`;
 * - `inProgress`: another delivery holds the key right now: retryable `IN_PROGRESS_ELSEWHERE`, nothing written.
 *
 * @internal
 */
export type Gate<Claim> =
  | (GateCount & { readonly kind: 'new' | 'retry'; readonly attempts: number; readonly claim: Claim })
  | (GateCount & { readonly kind: 'duplicate'; readonly copy?: DuplicateCopy })
  | (GateCount & { readonly kind: 'terminal'; readonly failureCode: string | undefined })
  | (GateCount & { readonly kind: 'cancelled' })
  | (GateCount & { readonly kind: 'hashMismatch'; readonly status: string })
  | { readonly kind: 'inProgress'; readonly message: string };

/**
 * What a handler gets of the store, and the switch that takes it back.
 *
 * @internal
 */
export interface HandlerScope {
  /** The store's part of the handler's context: PostgreSQL `{ sql }`, DynamoDB `{ client, table }`. */
  readonly handle: Readonly<Record<string, unknown>>;
  /** Ends the handler's access to the store; `cancelRunning` (past its budget) also stops what it still runs. */
  close(options?: { cancelRunning?: boolean }): void;
}

/**
 * A delivery whose failure is being settled: what the bookkeeping writes about.
 *
 * @internal
 */
export interface FailedDelivery<Claim> {
  readonly record: SQSRecord;
  readonly decoded: DecodedRecord | UndecodableRecord;
  readonly traceId: string | undefined;
  /** The claim this delivery holds, when it failed after its gate let it through. */
  readonly claim?: Claim;
}

/**
 * The writes of a failure's bookkeeping (DESIGN.md rule 3), in the store's bookkeeping unit ({@link RecordStore.settle}).
 *
 * @internal
 */
export interface FailureBook {
  /**
   * Counts this failed delivery where the store keeps the count; the attempts so far, this one included, or
   * undefined when it counted none (no key, a row that is not this request's to count, a count left to SQS).
   */
  count(failure: Failure): Promise<number | undefined>;
  /** Writes the decided failure on the key (status, code, message), once counted. */
  recordFailure(decided: Failure): Promise<void>;
  /** Keeps the terminal message (policy `quarantine`). */
  quarantine(reason: QuarantineReason): Promise<void>;
}

/**
 * A store as the record template (`process-record.ts`) uses it: primitives, each one step the template decides
 * on, none of them deciding an outcome. `Unit` is the store's unit of work for an attempt (a PostgreSQL transaction,
 * DynamoDB's record calls); `Claim` the token a claim gives back to the completion. The model is River's driver
 * interface and Powertools idempotency's `BasePersistenceLayer`: the engine owns the state machine, a store only
 * the reads and writes. A third store implements these and passes `test/integration/store-acceptance.test.ts`.
 *
 * @internal
 */
export interface RecordStore<Unit = unknown, Claim = unknown> {
  /** The store as a failure names it ("the database", "DynamoDB"). */
  readonly name: string;
  /** Called when one of its calls is given up on at its deadline (PostgreSQL discards its connections). */
  readonly abandoned?: () => void;
  /** Classifies an error of this store (its own codes first, then `classifyError`). */
  classify(error: unknown): Failure;
  /** Reads the referenced payload of a due record, before any unit of work (no connection waits on S3). */
  referencedPayload(record: SQSRecord, decoded: DecodedRecord, calls: StoreCalls): Promise<ReferencedPayload>;
  /** Runs an attempt's unit of work: resolved when what it wrote is committed; a throw rolls back what it can. */
  attempt<T>(calls: StoreCalls, work: (unit: Unit) => Promise<T>): Promise<T>;
  /** Claims the record's key in `unit`: the gate. A copy in flight elsewhere may also throw `IN_PROGRESS_ELSEWHERE`. */
  claim(unit: Unit, request: ClaimRequest): Promise<Gate<Claim>>;
  /** Marks the key of a hash mismatch terminal, where the store may (a key of another request is left as it is). */
  markMismatch(unit: Unit, request: ClaimRequest, failure: Pick<Failure, 'code' | 'message'>): Promise<void>;
  /** Keeps a terminal message decided at the gate, in `unit`. */
  quarantine(unit: Unit, record: SQSRecord, reason: QuarantineReason): Promise<void>;
  /** The store's part of the handler's context in `unit`. */
  handlerScope(unit: Unit): HandlerScope;
  /**
   * Completes the claimed key with the handler's `result` (the effect and COMPLETED, atomically); `stale` when the
   * store found the message older than its state. A failure throws (a lost claim as `LEASE_LOST`).
   */
  complete(
    unit: Unit,
    request: ClaimRequest,
    claim: Claim,
    result: unknown,
  ): Promise<{ readonly stale: boolean }>;
  /** Runs a failure's bookkeeping as one unit (a short transaction, one write); a throw leaves nothing of it. */
  settle<T>(
    calls: StoreCalls,
    failed: FailedDelivery<Claim>,
    work: (book: FailureBook) => Promise<T>,
  ): Promise<T>;
}
