import type postgres from 'postgres';
import { probeDatabase } from './probe-database.ts';

/** A database probe with a client of its own, returned by {@link createDatabaseProbe}. */
export interface DatabaseProbe {
  /** Resolves when the database answers within the timeout; rejects otherwise. */
  (): Promise<void>;
  /** Closes the current client. */
  close(): Promise<void>;
}

/**
 * Wraps {@link probeDatabase} with a client made by `connect` (a pool of one) and a timeout. A probe that times out
 * throws its client away and the next one connects afresh: a server that stops answering (a hung host, a black
 * hole) leaves a query waiting forever on its connection, and every later probe would wait behind it, so a
 * breaker would never see the database come back.
 *
 * @example
 * ```ts
 * const probe = createDatabaseProbe(() => createSql({ ...config.database, poolSize: 1 }), 5000);
 * await probe(); // rejects while the database is unavailable
 * ```
 */
export function createDatabaseProbe(connect: () => postgres.Sql, timeoutMs: number): DatabaseProbe {
  let sql: postgres.Sql | undefined;
  const discard = async () => {
    const stale = sql;
    sql = undefined;
    await stale?.end({ timeout: 0 }).catch(() => {});
  };
  const probe = async (): Promise<void> => {
    sql ??= connect();
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    const attempt = probeDatabase(sql);
    attempt.catch(() => {}); // settles after a timeout, when nobody waits for it
    try {
      await Promise.race([
        attempt,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            timedOut = true;
            reject(new Error(`the database did not answer a probe within ${timeoutMs} ms`));
          }, timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
      if (timedOut) void discard();
    }
  };
  return Object.assign(probe, { close: discard });
}
