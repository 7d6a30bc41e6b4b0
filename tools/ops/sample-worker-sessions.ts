import { setTimeout as sleep } from 'node:timers/promises';
import type postgres from 'postgres';
import { pinningReasons } from '../bench/pinning-conditions.ts';

/** What {@link sampleWorkerSessions} saw of the worker's sessions. */
export interface WorkerSessions {
  /** Distinct worker sessions (backend pids) seen. */
  readonly sessions: number;
  /** Samples taken. */
  readonly samples: number;
  /** The database users the worker's sessions were logged in as. */
  readonly users: readonly string[];
  /** Sessions whose state and statement this user may not see (no `pg_read_all_stats`). */
  readonly hidden: number;
  /** Pinning conditions met (AWS's list for PostgreSQL), each once; never a statement's text. */
  readonly pinning: readonly string[];
}

/** A running sampler: {@link WorkerSessionSampler.stop} ends it and returns what it saw. */
export interface WorkerSessionSampler {
  stop(): Promise<WorkerSessions>;
}

/**
 * Samples the worker's sessions (`application_name` = the consumer, as `createSql` names them) in
 * `pg_stat_activity` every `pollMs` while a smoke run sends its canaries, for the session state RDS Proxy would pin
 * a connection on, as far as another session can see it: a session-level advisory lock (held while the session is
 * idle, outside a transaction; the engine's transaction-level ones end with their transaction) and a statement that
 * meets a pinning condition (`SET`, `PREPARE`, `LISTEN`, a temporary table, …: `pinningReasons`), each session's
 * current or last statement. What it cannot see: prepared statements at the protocol level and earlier statements.
 *
 * @internal
 */
export function sampleWorkerSessions(
  sql: postgres.Sql,
  consumer: string,
  options: { pollMs?: number } = {},
): WorkerSessionSampler {
  const pids = new Set<number>();
  const hiddenPids = new Set<number>();
  const users = new Set<string>();
  const pinning = new Set<string>();
  let samples = 0;
  let stopped = false;
  let failure: unknown;
  const sampleOnce = async () => {
    const rows = await sql<
      { pid: number; usename: string | null; state: string | null; query: string | null; advisory: boolean }[]
    >`
      select a.pid, a.usename::text, a.state, a.query,
             exists (
               select 1 from pg_locks l where l.pid = a.pid and l.locktype = 'advisory' and l.granted
             ) as advisory
        from pg_stat_activity a
       where a.datname = current_database() and a.application_name = ${consumer}
    `;
    samples += 1;
    for (const row of rows) {
      pids.add(row.pid);
      if (row.usename) users.add(row.usename);
      if (row.state === null) {
        hiddenPids.add(row.pid);
        continue;
      }
      if (row.advisory && row.state === 'idle') pinning.add('session-level advisory lock');
      for (const reason of pinningReasons(row.query ?? '')) pinning.add(reason);
    }
  };
  const loop = (async () => {
    while (!stopped) {
      await sampleOnce().catch((error: unknown) => {
        failure = error;
        stopped = true;
      });
      if (!stopped) await sleep(options.pollMs ?? 250);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      if (failure) throw failure;
      return {
        sessions: pids.size,
        samples,
        users: [...users].sort(),
        hidden: hiddenPids.size,
        pinning: [...pinning].sort(),
      };
    },
  };
}
