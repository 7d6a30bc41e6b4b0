import type postgres from 'postgres';
import { onConnectionsDiscarded } from '../discard-connections.ts';
import { type FencedTransaction, fenceTransaction } from './fence-transaction.ts';

/**
 * Wraps the body of a savepoint of the transaction (`tx.savepoint(nested(fn))`) the way {@link beginTransaction}
 * wraps the transaction's own body.
 *
 * @internal
 */
export type NestedBody = <U>(
  fn: (tx: postgres.TransactionSql) => Promise<U>,
) => (tx: postgres.TransactionSql) => Promise<U>;

/** A promise that never settles: what a body returns once its connection is discarded. */
const never = <T>() => new Promise<T>(() => {});

/**
 * Runs `body` in `sql.begin`, and stops the transaction from touching its connection once the engine discards the
 * client's connections (`discardConnections`, after a database call it gave up on).
 *
 * Why: postgres.js answers a body that settles by writing ROLLBACK (or ROLLBACK TO SAVEPOINT, or COMMIT) on the
 * transaction's connection, and a statement the body still sends goes to the same connection; once that
 * connection's socket is gone, the write throws from a timer, outside any promise, and ends the process (a known
 * postgres.js defect). So when the client's connections are discarded — told synchronously, before any socket is
 * destroyed — the handle given to `body` is closed (later statements fail with `TransactionClosedError` without
 * reaching postgres.js) and the body, and every nested savepoint body, never settles: `sql.begin` rejects by itself
 * when the connection closes (`CONNECTION_CLOSED`), and nothing more is written. A connection lost any other way is
 * postgres.js's to handle.
 *
 * @internal
 */
export function beginTransaction<T>(
  sql: postgres.Sql,
  body: (tx: postgres.TransactionSql, nested: NestedBody) => Promise<T>,
): Promise<T> {
  let discarded = false;
  let fence: FencedTransaction | undefined;
  const stopListening = onConnectionsDiscarded(sql, () => {
    discarded = true;
    fence?.close();
  });
  const nested: NestedBody = (fn) => async (tx) => {
    let result: Awaited<ReturnType<typeof fn>>;
    try {
      result = await fn(tx);
    } catch (error) {
      if (discarded) return never();
      throw error;
    }
    return discarded ? never() : result;
  };
  const begun = sql.begin((tx) => {
    fence = fenceTransaction(tx);
    if (discarded) fence.close();
    return nested((fenced) => body(fenced, nested))(fence.sql);
  }) as Promise<T>;
  return begun.finally(stopListening);
}
