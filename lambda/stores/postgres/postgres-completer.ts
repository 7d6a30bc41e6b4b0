import type postgres from 'postgres';
import type { InboxClaim, InboxEntry } from './inbox.ts';

/**
 * Runs `fn` in a transaction: `sql.begin` per message; per batch, a savepoint of the batch transaction, or the
 * batch transaction itself while no record has needed a rollback (see `commit-per-batch.ts`).
 *
 * @internal
 */
export type TransactionRunner = <T>(fn: (tx: postgres.TransactionSql) => Promise<T>) => Promise<T>;

/**
 * A record's inbox claim as a completer made it; `durable` when it was made for the whole batch and outlives the
 * record's rollback (its attempt stays counted).
 *
 * @internal
 */
export interface CompleterClaim {
  readonly claim: InboxClaim;
  readonly durable: boolean;
}

/**
 * How the PostgreSQL store claims and completes a record's inbox row, and in which transactions (River's inline and
 * batch completers): `inlineCompleter` per message (its own transaction, its claim and completion statements),
 * `batchCompleter` per batch (the batch transaction or a savepoint of it, the batch's claim statement and one
 * completion statement for the batch). The record store (`postgres-record-store.ts`) is the same for both.
 *
 * @internal
 */
export interface PostgresCompleter {
  /** Runs a record's inbox transaction. */
  readonly transaction: TransactionRunner;
  /** Runs the short bookkeeping transaction after a rollback (DESIGN.md rule 3). */
  readonly bookkeeping: TransactionRunner;
  /** Claims and row-locks the record's inbox row in `tx` (see `claimInbox`). */
  claim(tx: postgres.TransactionSql, entry: InboxEntry): Promise<CompleterClaim>;
  /** Marks the claimed row COMPLETED with `resultRef`, in `tx` or with the batch's commit. */
  complete(
    tx: postgres.TransactionSql,
    entry: InboxEntry,
    claimed: CompleterClaim,
    resultRef: string | null,
  ): Promise<void>;
}
