import type postgres from 'postgres';
import { TransactionClosedError } from '../../errors.ts';

/** A transaction handle given to a handler, and the switch that closes it. */
export interface FencedTransaction {
  /** The handle the handler uses: the transaction's, until {@link FencedTransaction.close}. */
  readonly sql: postgres.TransactionSql;
  /**
   * Closes the handle: statements sent through it from now on fail with {@link TransactionClosedError} and never
   * reach the connection; statements running now are cancelled when `cancelRunning` is set.
   */
  close(options?: { cancelRunning?: boolean }): void;
}

/** What postgres.js's query objects carry that the fence needs (not part of its typings). */
interface QueryInternals {
  handler: (query: QueryInternals) => unknown;
  reject(error: unknown): void;
  cancel(): unknown;
}

const isQuery = (value: unknown): value is QueryInternals =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as { handler?: unknown }).handler === 'function' &&
  typeof (value as { then?: unknown }).then === 'function';

/**
 * Wraps a postgres.js transaction handle so that it stops working once the record's outcome is decided.
 *
 * Why: postgres.js binds a transaction handle to a connection, not to the transaction. A handler that outlives
 * its record (it timed out and the engine moved on, or it left a query un-awaited) would otherwise send its next
 * statement on that connection after the ROLLBACK or COMMIT: autocommitted outside any transaction, or inside the
 * next record's transaction. The check runs when postgres.js executes a query (queries are lazy), so a query built
 * before the close and awaited after it is refused too. Savepoints opened by the handler are fenced the same way.
 *
 * @internal
 */
export function fenceTransaction(tx: postgres.TransactionSql): FencedTransaction {
  let closed = false;
  const running = new Set<QueryInternals>();

  const guard = (value: unknown): unknown => {
    if (!isQuery(value)) return value;
    const execute = value.handler;
    value.handler = (query) => {
      if (closed) return query.reject(new TransactionClosedError());
      running.add(query);
      // Promise.prototype.then directly: postgres.js's own `then` would execute the query again.
      const done = () => running.delete(query);
      Promise.prototype.then.call(query, done, done);
      return execute(query);
    };
    return value;
  };
  const refuseWhenClosed = () => {
    if (closed) throw new TransactionClosedError();
  };

  const fence = <T extends object>(target: T): T =>
    new Proxy(target, {
      apply(fn, thisArg, args) {
        refuseWhenClosed();
        return guard(Reflect.apply(fn as (...a: unknown[]) => unknown, thisArg, args));
      },
      get(object, property, receiver) {
        const value = Reflect.get(object, property, receiver);
        if (property === 'unsafe' || property === 'file') {
          return (...args: unknown[]) => {
            refuseWhenClosed();
            return guard((value as (...a: unknown[]) => unknown).apply(object, args));
          };
        }
        if (property === 'savepoint') {
          // Its scope's statements (SAVEPOINT, RELEASE) go through postgres.js's inner handle: refused up front.
          return (...args: unknown[]) => {
            refuseWhenClosed();
            const wrapped = args.map((arg) =>
              typeof arg === 'function'
                ? (inner: postgres.TransactionSql) =>
                    (arg as (s: postgres.TransactionSql) => unknown)(fence(inner))
                : arg,
            );
            return (value as (...a: unknown[]) => unknown).apply(object, wrapped);
          };
        }
        return value;
      },
    });

  return {
    sql: fence(tx),
    close(options = {}) {
      closed = true;
      if (options.cancelRunning) for (const query of running) query.cancel();
      running.clear();
    },
  };
}
