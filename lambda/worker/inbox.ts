import type postgres from 'postgres';
import type { Envelope } from './envelope.ts';
import { settingMs, type TransactionTimeouts } from './transaction-timeouts.ts';

type Sql = postgres.Sql | postgres.TransactionSql;

/**
 * Status of an inbox row (the pattern document's state machine).
 *
 * @internal
 */
export type InboxStatus = 'RECEIVED' | 'PROCESSING' | 'COMPLETED' | 'FAILED_RETRYABLE' | 'FAILED_TERMINAL';

/**
 * The claimed, row-locked inbox row as the claim returns it.
 *
 * @internal
 */
export interface InboxClaim {
  readonly status: InboxStatus;
  readonly requestHash: string;
  /** Deliveries counted so far, this one included. */
  readonly receiveCount: number;
  /** True when this delivery created the row. */
  readonly inserted: boolean;
  readonly failureCode: string | null;
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
}

/**
 * Claims AND row-locks the inbox row of a delivery in one round trip (DESIGN.md, engine notes): a new key
 * is inserted as PROCESSING; an existing one gets `last_seen_at` and `receive_count` bumped. A concurrent
 * transaction claiming the same key blocks on the row until this one ends, then sees its committed status.
 * Run it inside the transaction that applies the effect.
 *
 * The timeouts ride in the same statement, so the claim costs no statement of its own for them (measured: a
 * separate `set_config` statement, even pipelined, cost ~8 % of per-message throughput), and it is one template
 * (no fragments: each is a query object postgres.js builds per call):
 * - `claimLockTimeoutMs` and `statementTimeoutMs` are set by the row source of the INSERT … SELECT, which is
 *   evaluated before the row is inserted, i.e. before any lock wait: the claim waits at most
 *   `claimLockTimeoutMs` for a copy in flight, and `statementTimeoutMs` applies to every later statement of the
 *   transaction;
 * - `lockTimeoutMs` is set in RETURNING, evaluated once the insert or the conflict update holds the row: what
 *   follows (the domain mutation) waits under it.
 * `set_config(…, true)` is transaction-scoped (like SET LOCAL): nothing outlives the transaction on a pooled
 * or proxied connection.
 *
 * @internal
 */
export async function claimInbox(
  sql: postgres.TransactionSql,
  entry: InboxEntry,
  timeouts: TransactionTimeouts,
): Promise<InboxClaim> {
  const e = entry.envelope;
  const [row] = await sql<
    {
      status: InboxStatus;
      request_hash: string;
      receive_count: number;
      inserted: boolean;
      failure_code: string | null;
    }[]
  >`
    insert into worker_inbox (
      consumer, idempotency_key, message_type, schema_version, aggregate_type, aggregate_id,
      status, request_hash, started_at, receive_count, last_message_id, correlation_id
    )
    select
      ${entry.consumer}, ${e.idempotencyKey}, ${e.messageType}, ${e.schemaVersion}::int, ${e.aggregateType},
      ${e.aggregateId}, 'PROCESSING', ${entry.requestHash}, now(), 1, ${entry.sqsMessageId}, ${e.correlationId ?? null}
    from (
      select set_config('lock_timeout', ${settingMs(timeouts.claimLockTimeoutMs)}, true),
             set_config('statement_timeout', ${settingMs(timeouts.statementTimeoutMs)}, true)
    ) as timeouts
    on conflict (consumer, idempotency_key) do update
      set last_seen_at = now(),
          receive_count = worker_inbox.receive_count + 1,
          last_message_id = excluded.last_message_id
    returning status, request_hash, receive_count, (xmax = 0) as inserted, failure_code,
              set_config('lock_timeout', ${settingMs(timeouts.lockTimeoutMs)}, true) as lock_timeout
  `;
  if (!row) throw new Error('inbox claim returned no row');
  return {
    status: row.status,
    requestHash: row.request_hash,
    receiveCount: row.receive_count,
    inserted: row.inserted,
    failureCode: row.failure_code,
  };
}

/**
 * Marks a claimed row COMPLETED with its result reference, in the effect's transaction.
 *
 * @internal
 */
export async function completeInbox(
  sql: postgres.TransactionSql,
  input: { consumer: string; idempotencyKey: string; resultRef: string | null },
): Promise<void> {
  await sql`
    update worker_inbox
    set status = 'COMPLETED', completed_at = now(), result_ref = ${input.resultRef},
        started_at = coalesce(started_at, now()), failure_code = null, failure_message = null
    where consumer = ${input.consumer} and idempotency_key = ${input.idempotencyKey}
  `;
}

/**
 * Marks a row FAILED_TERMINAL unless it is COMPLETED (a COMPLETED row keeps its status: its effect exists).
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
    where consumer = ${input.consumer} and idempotency_key = ${input.idempotencyKey} and status <> 'COMPLETED'
  `;
}

/**
 * Counts a failed delivery after its transaction rolled back (DESIGN.md rule 3): upserts the row (the
 * rollback removed the claim of a first delivery) and bumps `receive_count`. Rows that are COMPLETED,
 * FAILED_TERMINAL or belong to another request hash are left alone and `undefined` is returned.
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
      status, request_hash, receive_count, failed_at, last_message_id, correlation_id
    ) values (
      ${entry.consumer}, ${e.idempotencyKey}, ${e.messageType}, ${e.schemaVersion}, ${e.aggregateType}, ${e.aggregateId},
      ${status}, ${entry.requestHash}, 1, now(), ${entry.sqsMessageId}, ${e.correlationId ?? null}
    )
    on conflict (consumer, idempotency_key) do update
      set last_seen_at = now(),
          receive_count = worker_inbox.receive_count + 1,
          last_message_id = excluded.last_message_id
      where worker_inbox.status not in ('COMPLETED', 'FAILED_TERMINAL')
        and worker_inbox.request_hash = excluded.request_hash
    returning receive_count
  `;
  return row?.receive_count;
}

/**
 * Writes the failure of a counted attempt: status, code, message, failed_at.
 *
 * @internal
 */
export async function recordInboxFailure(
  sql: Sql,
  input: {
    consumer: string;
    idempotencyKey: string;
    status: 'FAILED_RETRYABLE' | 'FAILED_TERMINAL';
    code: string;
    message: string;
  },
): Promise<void> {
  await sql`
    update worker_inbox
    set status = ${input.status}, failed_at = now(), failure_code = ${input.code}, failure_message = ${input.message}
    where consumer = ${input.consumer} and idempotency_key = ${input.idempotencyKey} and status <> 'COMPLETED'
  `;
}
