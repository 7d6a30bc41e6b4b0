import type postgres from 'postgres';
import { RetryableError } from '../../errors.ts';
import type { Envelope } from '../../worker/envelope.ts';
import type { DuplicateCopy } from '../../worker/record-store.ts';
import {
  type AttemptDelivery,
  appendedAttemptHistory,
  attemptEntry,
  deliveryAttempt,
} from './attempt-history-sql.ts';
import { duplicateCopyOf, duplicateCountsSet } from './duplicate-counts.ts';

type Sql = postgres.Sql | postgres.TransactionSql;

/**
 * Status of an inbox row (the pattern document's state machine).
 *
 * @internal
 */
export type InboxStatus =
  | 'RECEIVED'
  | 'PROCESSING'
  | 'COMPLETED'
  | 'FAILED_RETRYABLE'
  | 'FAILED_TERMINAL'
  | 'CANCELLED';

/**
 * The claimed, row-locked inbox row as the claim returns it.
 *
 * @internal
 */
export interface InboxClaim {
  /**
   * The row's status as this delivery found it; `PROCESSING` for a row this delivery inserted (stored already
   * COMPLETED when {@link InboxClaim.completed}); `CANCELLED` when an operator cancelled the key
   * (`worker_cancelled_keys`), whether the row existed or this claim inserted it so.
   */
  readonly status: InboxStatus;
  readonly requestHash: string;
  /** Deliveries counted so far, this one included. */
  readonly receiveCount: number;
  /** True when this delivery created the row. */
  readonly inserted: boolean;
  readonly failureCode: string | null;
  /**
   * True when the claim inserted the row already COMPLETED, with `resultRef` as its result reference: the
   * transaction's commit completes it and its rollback removes it, so no completion statement is needed. False
   * for an existing row (a redelivery after a failed attempt is completed by {@link completeInbox}).
   */
  readonly completed: boolean;
  /** The result reference the claim stored (the handler's `resultRef` known before it ran), if `completed`. */
  readonly resultRef: string | null;
  /** For a row found COMPLETED with this request: the kind of copy this delivery is (`duplicate-counts.ts`). */
  readonly duplicateCopy?: DuplicateCopy | undefined;
}

/**
 * What identifies a delivery in the inbox.
 *
 * @internal
 */
export interface InboxEntry {
  readonly consumer: string;
  readonly envelope: Envelope;
  readonly requestHash: string;
  /** SQS messageId of this delivery. */
  readonly sqsMessageId: string;
  /**
   * The result reference known before the handler runs (`MessageHandler.resultRef`), stored by a claim that
   * inserts the row COMPLETED; null or absent when the handler declares none.
   */
  readonly resultRef?: string | null;
  /** The producer's trace id this delivery carries (`recordTrace`), if any: `worker_inbox.trace_id`. */
  readonly traceId?: string;
  /**
   * The worker version handling the delivery (`config.workerVersion`): `first_version` of a row it inserts, and the
   * version of the attempt it adds to `attempt_history`.
   */
  readonly workerVersion?: string;
  /** SQS ApproximateReceiveCount of this delivery, kept on its attempt. */
  readonly receiveCount?: number;
}

/**
 * Seed of the 64-bit hash (`hashtextextended(consumer || chr(31) || idempotency_key, seed)`) that keys the
 * transaction-level advisory lock guarding an inbox row. A hash collision only makes two keys take turns.
 *
 * @internal
 */
export const INBOX_LOCK_SEED = 7_316_204_582;

/**
 * Claims AND row-locks the inbox row of a delivery in one statement (DESIGN.md, engine notes), and completes a
 * new key in the same statement: a new key is inserted already COMPLETED, with the result reference known before
 * the handler runs — the transaction's rollback (a failed handler, a timeout) removes the row again, so the
 * common path needs no completion statement (3 round trips per message on the worker's client, not 4). An
 * existing key gets `last_seen_at` and `receive_count` bumped, its status untouched, and is returned as it was:
 * COMPLETED (a duplicate), FAILED_TERMINAL, another hash, or a failed earlier attempt that the caller completes
 * with {@link completeInbox} after its handler. Run it inside the transaction (or the record's savepoint) that
 * applies the effect, so that a failure rolls the claim back with the handler's writes; a claim made for a whole
 * batch, whose rows must outlive a record's rolled-back savepoint, claims PROCESSING instead ({@link claimBatch}).
 *
 * A copy of the message in flight elsewhere is answered at once, without waiting: the row source first takes
 * `pg_try_advisory_xact_lock` on the key. When another transaction holds it (it claimed the key and has not
 * ended), no row is written or locked and a `RetryableError` `IN_PROGRESS_ELSEWHERE` is thrown: the record is
 * retried with backoff. A transaction-level advisory lock ends with its transaction (or with the savepoint it
 * was taken in, when that is rolled back), is not session state, and does not pin an RDS Proxy connection
 * (AWS's "Avoiding pinning an RDS Proxy" says so for the `_xact_` variants, while it lists `set_config` and the
 * session-level advisory locks as pinning). The engine's transactions take this lock before they write an inbox
 * row, so they never wait for each other on one; another writer (an ops command) is waited for under the role's
 * `lock_timeout` (55P03, also reported as in flight).
 *
 * The statement and lock timeouts are the database role's defaults (`alter role … set`, see provisionRoles):
 * nothing in the transaction sets them.
 *
 * @throws RetryableError `IN_PROGRESS_ELSEWHERE` when another transaction holds the key or its row.
 *
 * @internal
 */
export async function claimInbox(sql: postgres.TransactionSql, entry: InboxEntry): Promise<InboxClaim> {
  const e = entry.envelope;
  // trace_id: the delivery that claims the row brings its trace, but a COMPLETED row keeps the trace of the delivery
  // that made its effect (a duplicate never replaces it). A copy of a cancelled key is an attempt, refused.
  const refusedAgain = attemptEntry(sql, {
    ...deliveryAttempt(entry, 'CANCELLED', 'CANCELLED'),
    attempt: sql`worker_inbox.receive_count + 1`,
  });
  const rows = await sql<
    {
      status: InboxStatus;
      request_hash: string;
      receive_count: number;
      inserted: boolean;
      failure_code: string | null;
      last_duplicate_kind: string | null;
    }[]
  >`
    insert into worker_inbox (
      consumer, idempotency_key, message_type, schema_version, aggregate_type, aggregate_id,
      status, request_hash, started_at, completed_at, result_ref, receive_count, last_message_id, correlation_id,
      trace_id, failed_at, failure_code, first_version, attempt_history
    )
    select
      ${entry.consumer}::varchar, ${e.idempotencyKey}::varchar, ${e.messageType}::varchar, ${e.schemaVersion}::int,
      ${e.aggregateType}::varchar, ${e.aggregateId}::varchar, case when c.cancelled then 'CANCELLED' else 'COMPLETED' end,
      ${entry.requestHash}::text, now(), case when c.cancelled then null else now() end,
      case when c.cancelled then null else ${entry.resultRef ?? null}::text end, 1, ${entry.sqsMessageId}::varchar,
      ${e.correlationId ?? null}::varchar, ${entry.traceId ?? null}::varchar, case when c.cancelled then now() end,
      case when c.cancelled then 'CANCELLED' end, ${entry.workerVersion ?? null}::varchar,
      jsonb_build_array(case when c.cancelled
        then ${attemptEntry(sql, { ...deliveryAttempt(entry, 'CANCELLED', 'CANCELLED'), attempt: 1 })}
        else ${attemptEntry(sql, { ...deliveryAttempt(entry, 'COMPLETED'), attempt: 1 })} end)
    from (${cancelledKey(sql, entry.consumer, e.idempotencyKey)}) as c
    where pg_try_advisory_xact_lock(
      hashtextextended(${entry.consumer}::text || chr(31) || ${e.idempotencyKey}::text, ${INBOX_LOCK_SEED}::int8)
    )
    on conflict (consumer, idempotency_key) do update
      set last_seen_at = now(),
          receive_count = worker_inbox.receive_count + 1,
          ${duplicateCountsSet(sql)},
          last_message_id = excluded.last_message_id,
          status = ${sql.unsafe(CANCELLED_UNLESS_COMPLETED_SQL)},
          attempt_history = case when excluded.status = 'CANCELLED' and worker_inbox.status <> 'COMPLETED'
            then ${appendedAttemptHistory(sql, refusedAgain, sql`worker_inbox.attempt_history`)}
            else worker_inbox.attempt_history end,
          trace_id = case when worker_inbox.status = 'COMPLETED' then worker_inbox.trace_id
            else coalesce(excluded.trace_id, worker_inbox.trace_id) end
    returning status, request_hash, receive_count, (xmax = 0) as inserted, failure_code, last_duplicate_kind
  `.catch((error: unknown) => {
    if ((error as { code?: string }).code !== '55P03') throw error;
    throw new RetryableError('IN_PROGRESS_ELSEWHERE', 'another transaction holds the inbox row of this key', {
      cause: error,
    });
  });
  const [row] = rows;
  if (!row) {
    throw new RetryableError(
      'IN_PROGRESS_ELSEWHERE',
      'another delivery of this idempotency key is being processed right now',
    );
  }
  const completed = row.inserted && row.status === 'COMPLETED';
  return {
    status: completed ? 'PROCESSING' : row.status,
    requestHash: row.request_hash,
    receiveCount: row.receive_count,
    inserted: row.inserted,
    failureCode: row.failure_code,
    completed,
    resultRef: completed ? (entry.resultRef ?? null) : null,
    duplicateCopy: row.inserted ? undefined : duplicateCopyOf(row.last_duplicate_kind),
  };
}

/**
 * The SQLSTATE the deferred constraint triggers of migration 00013 raise at COMMIT when a transaction would leave a
 * cancelled key COMPLETED: a copy that claimed the key before `sqs-worker inbox cancel` ran. Its transaction rolls
 * back whole, effect included.
 *
 * @internal
 */
export const CANCELLED_SQLSTATE = 'IWC01';

/**
 * A one-row source `(cancelled boolean)`: whether an operator cancelled the key (`worker_cancelled_keys`). The claims
 * select their row from it, so a cancelled key is claimed CANCELLED in the claim's own statement (no round trip more).
 *
 * @internal
 */
export function cancelledKey(sql: Sql, consumer: string, idempotencyKey: string) {
  return sql`
    select exists (
      select 1 from worker_cancelled_keys
      where consumer = ${consumer}::varchar and idempotency_key = ${idempotencyKey}::varchar
    ) as cancelled
  `;
}

/**
 * The claims' `on conflict` status: CANCELLED when the claim found the key cancelled (`excluded.status`) and its row is
 * not COMPLETED (an effect that exists stays), the row's own status otherwise.
 *
 * @internal
 */
export const CANCELLED_UNLESS_COMPLETED_SQL =
  "case when excluded.status = 'CANCELLED' and worker_inbox.status <> 'COMPLETED' then 'CANCELLED' else worker_inbox.status end";

/**
 * True when the key's row is COMPLETED with this request hash: one autocommit statement (on the pool), read before a
 * referenced payload is, so a duplicate is not read from S3 again.
 *
 * @internal
 */
export async function isInboxCompleted(
  sql: Sql,
  input: { consumer: string; idempotencyKey: string; requestHash: string },
): Promise<boolean> {
  const [row] = await sql<{ completed: boolean }[]>`
    select request_hash = ${input.requestHash} and status = 'COMPLETED' as completed
    from worker_inbox where consumer = ${input.consumer} and idempotency_key = ${input.idempotencyKey}
  `;
  return row?.completed === true;
}

/**
 * Marks a claimed row COMPLETED with its result reference, in the effect's transaction: a row the claim found
 * (a redelivery after a failed attempt), or one it inserted COMPLETED whose handler returned another result
 * reference than the one known before it ran. The completed attempt is added to the history by the same statement
 * (the claim that inserted a row COMPLETED has added it already).
 *
 * @internal
 */
export async function completeInbox(
  sql: postgres.TransactionSql,
  input: {
    consumer: string;
    idempotencyKey: string;
    resultRef: string | null;
    entry: AttemptDelivery;
  },
): Promise<void> {
  const history = appendedAttemptHistory(sql, attemptEntry(sql, deliveryAttempt(input.entry, 'COMPLETED')));
  await sql`
    update worker_inbox
    set status = 'COMPLETED', completed_at = now(), result_ref = ${input.resultRef},
        started_at = coalesce(started_at, now()), failure_code = null, failure_message = null,
        attempt_history = case when status = 'COMPLETED' then attempt_history else ${history} end
    where consumer = ${input.consumer} and idempotency_key = ${input.idempotencyKey}
  `;
}

/**
 * Marks a row FAILED_TERMINAL unless it is COMPLETED (a COMPLETED row keeps its status: its effect exists) or
 * CANCELLED (an operator's decision stands).
 * Used for a hash mismatch, where the row also keeps the first message's hash.
 *
 * @internal
 */
export async function markInboxTerminal(
  sql: Sql,
  input: { consumer: string; idempotencyKey: string; code: string; message: string },
): Promise<void> {
  await sql`
    update worker_inbox
    set status = 'FAILED_TERMINAL', failed_at = now(), failure_code = ${input.code}, failure_message = ${input.message}
    where consumer = ${input.consumer} and idempotency_key = ${input.idempotencyKey}
      and status not in ('COMPLETED', 'CANCELLED')
  `;
}

/**
 * Counts a failed delivery after its transaction rolled back (DESIGN.md rule 3): upserts the row (the
 * rollback removed the claim of a first delivery) and bumps `receive_count`. Rows that are COMPLETED,
 * FAILED_TERMINAL, CANCELLED or belong to another request hash are left alone and `undefined` is returned; so is a row
 * whose key another transaction holds right now (the inbox lock of {@link claimInbox}, tried, never waited
 * for): that delivery's own transaction writes the row.
 *
 * @returns the business attempts so far, this one included.
 *
 * @internal
 */
export async function countFailedAttempt(
  sql: Sql,
  entry: InboxEntry,
  status: InboxStatus,
): Promise<number | undefined> {
  const e = entry.envelope;
  const [row] = await sql<{ receive_count: number }[]>`
    insert into worker_inbox (
      consumer, idempotency_key, message_type, schema_version, aggregate_type, aggregate_id,
      status, request_hash, receive_count, failed_at, last_message_id, correlation_id, trace_id, first_version
    )
    select
      ${entry.consumer}, ${e.idempotencyKey}, ${e.messageType}, ${e.schemaVersion}::int, ${e.aggregateType},
      ${e.aggregateId}, ${status}, ${entry.requestHash}, 1, now(), ${entry.sqsMessageId}, ${e.correlationId ?? null},
      ${entry.traceId ?? null}, ${entry.workerVersion ?? null}
    where pg_try_advisory_xact_lock(
      hashtextextended(${entry.consumer}::text || chr(31) || ${e.idempotencyKey}::text, ${INBOX_LOCK_SEED}::int8)
    )
    on conflict (consumer, idempotency_key) do update
      set last_seen_at = now(),
          receive_count = worker_inbox.receive_count + 1,
          last_message_id = excluded.last_message_id,
          trace_id = coalesce(excluded.trace_id, worker_inbox.trace_id)
      where worker_inbox.status not in ('COMPLETED', 'FAILED_TERMINAL', 'CANCELLED')
        and worker_inbox.request_hash = excluded.request_hash
    returning receive_count
  `;
  return row?.receive_count;
}

/**
 * Writes the failure of a counted attempt: status, code, message, failed_at, and the attempt added to the row's
 * bounded `attempt_history` in the same statement (a COMPLETED or CANCELLED row keeps its status; a cancelled key's
 * failure is written with `status` CANCELLED).
 *
 * @internal
 */
export async function recordInboxFailure(
  sql: Sql,
  input: {
    consumer: string;
    idempotencyKey: string;
    status: 'FAILED_RETRYABLE' | 'FAILED_TERMINAL' | 'CANCELLED';
    code: string;
    message: string;
    entry: AttemptDelivery;
  },
): Promise<void> {
  const attempt = attemptEntry(sql, deliveryAttempt(input.entry, input.status, input.code));
  await sql`
    update worker_inbox
    set status = ${input.status}, failed_at = now(), failure_code = ${input.code}, failure_message = ${input.message},
        attempt_history = ${appendedAttemptHistory(sql, attempt)}
    where consumer = ${input.consumer} and idempotency_key = ${input.idempotencyKey}
      and status <> 'COMPLETED' and (status <> 'CANCELLED' or ${input.status}::text = 'CANCELLED')
  `;
}
