import type postgres from 'postgres';
import { guardedBegin } from './guarded-begin.ts';
import { claimInbox, completeInbox } from './inbox.ts';
import type { PostgresCompleter, TransactionRunner } from './postgres-completer.ts';

/**
 * The per-message completer: every record in its own `sql.begin` transaction ({@link guardedBegin}: a connection
 * lost under it never reaches postgres.js's socket), the bookkeeping after a rollback in another, the row claimed by
 * `claimInbox` and completed in the record's transaction. A new key's claim stored it COMPLETED with the declared
 * result reference, so nothing is written unless the handler returned another one; an existing row (a redelivery
 * after a failed attempt) is completed here.
 *
 * @internal
 */
export function inlineCompleter(sql: postgres.Sql): PostgresCompleter {
  const begin: TransactionRunner = (fn) => guardedBegin(sql, fn);
  return {
    transaction: begin,
    bookkeeping: begin,
    claim: async (tx, entry) => ({ claim: await claimInbox(tx, entry), durable: false }),
    async complete(tx, entry, { claim }, resultRef) {
      if (claim.completed && resultRef === claim.resultRef) return;
      await completeInbox(tx, {
        consumer: entry.consumer,
        idempotencyKey: entry.envelope.idempotencyKey,
        resultRef,
        entry,
      });
    },
  };
}
