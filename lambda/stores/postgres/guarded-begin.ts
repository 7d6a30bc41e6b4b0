import type postgres from 'postgres';
import { onConnectionsDiscarded } from '../../postgres/discard-connections.ts';
import { NETWORK_ERROR_CODES } from '../../worker/classify-error.ts';

/**
 * How long a transaction whose connection broke leaves postgres.js to end it (`sql.begin` rejects when the
 * connection closes, within the same turn of the event loop) before its callback settles after all.
 *
 * @internal
 */
export const CONNECTION_LOSS_SETTLE_MS = 1000;

/** Codes of a query's error that mean its connection is gone: postgres.js's own, and a broken socket's. */
const LOSS_CODES: ReadonlySet<string> = new Set([
  ...NETWORK_ERROR_CODES,
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  'CONNECTION_ENDED',
]);

/**
 * The loss a transaction sees when the engine discards its client's connections (`discardConnections`): the code
 * postgres.js gives a query whose connection closed, so it classifies as any other lost connection.
 */
const discarded = () =>
  Object.assign(
    new Error(
      'the connection was discarded: a database call of this client did not answer before its deadline',
    ),
    { code: 'CONNECTION_CLOSED' },
  );

const isConnectionLoss = (error: unknown): boolean =>
  typeof error === 'object' &&
  error !== null &&
  typeof (error as { code?: unknown }).code === 'string' &&
  LOSS_CODES.has((error as { code: string }).code);

/** What postgres.js's query objects carry that the guard needs (not part of its typings). */
interface QueryInternals extends PromiseLike<unknown> {
  handler: (query: QueryInternals) => unknown;
  reject(error: unknown): void;
}

const isQuery = (value: unknown): value is QueryInternals =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as { handler?: unknown }).handler === 'function' &&
  typeof (value as { then?: unknown }).then === 'function';

/**
 * `sql.begin(fn)` that never lets postgres.js write on a connection that closed under the transaction.
 *
 * Why: postgres.js 3.4.9 rejects `sql.begin` when the transaction's connection closes (a killed backend, a
 * failover, a proxy cut) but keeps running the callback, and whatever reaches the connection afterwards — the
 * callback's next statement, or the ROLLBACK or COMMIT postgres.js sends itself when the callback settles — is
 * written to a socket that is gone, from a timer: `TypeError: Cannot read properties of null (reading 'write')`,
 * uncaught, and the process dies; once the pool has reconnected, it can land on another transaction's session
 * instead. This project patches the driver (patches/, docs/semantics.md "The PostgreSQL driver"), but a project
 * that installs this package has the driver unpatched: the patch applies to this repository's own install only.
 * So the boundary guards itself. The transaction handle refuses statements once a statement of it failed with a
 * connection error or `sql.begin` rejected with one (the statement fails with that error, a connection-class
 * failure), a savepoint answers with that error at once, and the callback (and a savepoint's) is then held
 * unsettled: postgres.js has nothing to send, and `sql.begin` rejects by itself as the connection closes. A
 * callback still held after {@link CONNECTION_LOSS_SETTLE_MS} (the connection did not close after all) settles.
 *
 * The engine's own discard of a client's connections (`discardConnections`, after a database call past its deadline)
 * is a loss too, known before any socket is destroyed: the transaction stops at once, before postgres.js could write
 * its ROLLBACK on the socket being destroyed.
 *
 * @internal
 */
export function guardedBegin<T>(
  sql: postgres.Sql,
  fn: (tx: postgres.TransactionSql) => Promise<T>,
): Promise<T> {
  let lost: { error: unknown } | undefined;
  let ended = false;
  let rejectLoss: (error: unknown) => void = () => {};
  const loss = new Promise<never>((_, reject) => {
    rejectLoss = reject;
  });
  loss.catch(() => {});
  const markLost = (error: unknown) => {
    if (lost) return;
    lost = { error };
    rejectLoss(error);
  };

  const guardQuery = (value: unknown): unknown => {
    if (!isQuery(value)) return value;
    // Observed from its creation, before any caller awaits it (Promise.prototype.then: postgres.js's own `then`
    // would execute the query), so the loss is known before the caller's code goes on.
    Promise.prototype.then.call(value, undefined, (error: unknown) => {
      if (isConnectionLoss(error)) markLost(error);
    });
    const execute = value.handler;
    value.handler = (query) => (lost ? query.reject(lost.error) : execute(query));
    return value;
  };

  /** Runs a transaction's or a savepoint's callback; after a loss its outcome is withheld from postgres.js. */
  const hold = async <R>(run: () => Promise<R>): Promise<R> => {
    let failure: { error: unknown } | undefined;
    try {
      const result = await run();
      if (!lost) return result;
    } catch (error) {
      if (isConnectionLoss(error)) markLost(error);
      if (!lost) throw error;
      failure = { error };
    }
    const error = failure ? failure.error : (lost as { error: unknown }).error;
    return new Promise<never>((_, reject) => {
      if (ended) return;
      const timer = setTimeout(() => reject(error), CONNECTION_LOSS_SETTLE_MS);
      timer.unref();
      begun.then(
        () => clearTimeout(timer),
        () => clearTimeout(timer),
      );
    });
  };

  const guard = <S extends object>(target: S): S =>
    new Proxy(target, {
      apply(call, thisArg, args) {
        return guardQuery(Reflect.apply(call as (...a: unknown[]) => unknown, thisArg, args));
      },
      get(object, property, receiver) {
        const value = Reflect.get(object, property, receiver);
        if (property === 'unsafe' || property === 'file') {
          return (...args: unknown[]) =>
            guardQuery((value as (...a: unknown[]) => unknown).apply(object, args));
        }
        if (property === 'savepoint') {
          return (...args: unknown[]) => {
            if (lost) return Promise.reject(lost.error);
            const wrapped = args.map((arg) =>
              typeof arg === 'function'
                ? (inner: postgres.TransactionSql) =>
                    hold(() => (arg as (s: postgres.TransactionSql) => Promise<unknown>)(guard(inner)))
                : arg,
            );
            // The savepoint's own scope is held after a loss: its caller hears of the loss at once instead.
            return Promise.race([
              (value as (...a: unknown[]) => Promise<unknown>).apply(object, wrapped),
              loss,
            ]);
          };
        }
        return value;
      },
    });

  const stopListening = onConnectionsDiscarded(sql, () => markLost(discarded()));
  const begun = sql.begin((tx) => hold(() => fn(guard(tx)))) as Promise<T>;
  begun.then(
    () => {
      ended = true;
      stopListening();
    },
    (error: unknown) => {
      ended = true;
      stopListening();
      if (isConnectionLoss(error)) markLost(error);
    },
  );
  return begun;
}
