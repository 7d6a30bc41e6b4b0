import type postgres from 'postgres';
import { settingMs } from '../postgres/setting-ms.ts';

/** Options of {@link collectHealth}. */
export interface CollectHealthOptions {
  /** Inbox namespace whose inbox and quarantine rows are counted (`WORKER_CONSUMER`). */
  readonly consumer: string;
  /** Server-side bound of every statement of the check, 100 – 60000 ms. @default 5000 */
  readonly statementTimeoutMs?: number;
  /**
   * A transaction that holds a lock on one of the toolkit's tables for longer than this counts as long-running,
   * 0 – 3600000 ms. @default 30000
   */
  readonly longTransactionMs?: number;
}

/** The inbox statuses that are not settled; `COMPLETED` is not counted (an exact count would scan the table). */
export const UNFINISHED_INBOX_STATUSES = [
  'RECEIVED',
  'PROCESSING',
  'FAILED_RETRYABLE',
  'FAILED_TERMINAL',
] as const;

/** An inbox status that {@link collectHealth} counts. */
export type UnfinishedInboxStatus = (typeof UNFINISHED_INBOX_STATUSES)[number];

/** What {@link collectHealth} read. Ages are milliseconds, `null` when there is nothing to measure. */
export interface HealthFigures {
  readonly consumer: string;
  /** The database's clock when the figures were read (ISO 8601). */
  readonly at: string;
  readonly quarantine: {
    /** Entries not released yet. */
    readonly open: number;
    /** Age of the oldest open entry, by `first_quarantined_at`. */
    readonly oldestOpenAgeMs: number | null;
  };
  readonly inbox: {
    /** Committed rows of each unfinished status. */
    readonly byStatus: Readonly<Record<UnfinishedInboxStatus, number>>;
    /** Age of the oldest committed PROCESSING row, by `started_at`. */
    readonly oldestProcessingAgeMs: number | null;
    /** Age of the oldest FAILED_RETRYABLE row, by `first_seen_at`. */
    readonly oldestRetryableAgeMs: number | null;
    /**
     * Age of the oldest message in flight: the oldest committed PROCESSING row, or the oldest open transaction
     * that writes `worker_inbox`, whichever is older. A claim is `PROCESSING` only inside the worker's own
     * transaction, which no other session can see, so the transaction's age is how a stuck claim shows.
     */
    readonly oldestInFlightAgeMs: number | null;
  };
  readonly outbox: {
    /** PENDING rows. */
    readonly pending: number;
    /** Age of the oldest PENDING row, by `created_at`. */
    readonly oldestPendingAgeMs: number | null;
  };
  readonly locks: {
    /** Lock requests of this database not granted yet (sessions waiting for a lock). */
    readonly waiting: number;
    /** How long the longest of them has waited. */
    readonly oldestWaitMs: number | null;
  };
  /**
   * PROCESSING items whose lease expired (the DynamoDB store's: a worker died or lost the table after the gate).
   * PostgreSQL holds no leases (a claim is a row lock): absent, published as 0.
   */
  readonly leasesExpired?: number;
  /** Deadlocks detected in this database since the previous check of this execution environment (0 the first time). */
  readonly deadlocks: number;
  readonly longTransactions: {
    /** Transactions older than `longTransactionMs` that hold a lock on a toolkit table. */
    readonly count: number;
    /** Age of the oldest transaction holding a lock on a toolkit table. */
    readonly oldestAgeMs: number | null;
  };
}

/** The toolkit's tables: a transaction holding a lock on one of them is the worker's business. */
const WATCHED_TABLES = ['worker_inbox', 'worker_quarantine', 'outbox_events', 'external_effect_log'];

/**
 * The deadlock counter of the previous check, kept in module scope: one value per execution environment (a Lambda
 * environment, a CLI process), so a scheduled function publishes the deadlocks of each interval. Keyed by database
 * so a process that checks two databases does not mix their counters.
 */
const previousDeadlocks = new Map<string, number>();

const age = (value: number | string | null): number | null =>
  value === null ? null : Math.max(0, Math.round(Number(value)));

/**
 * Reads the worker's health from the database: open quarantine entries, unfinished inbox rows and the age of the
 * oldest in flight and retryable, the outbox backlog, lock waits, deadlocks since the previous check and
 * long-running transactions on the toolkit's tables.
 *
 * Runtime-neutral (the scheduled Lambda `lambda/handlers/health.ts` and `sqs-worker health` both call it) and
 * harmless to the database it watches: ONE read-only transaction on one connection, every statement bounded by
 * `statementTimeoutMs` (`set_config(…, true)`, scoped to the transaction, so nothing pins a proxied connection),
 * and only index-backed counts (COMPLETED inbox rows are not counted). Lock waits are those of this database's
 * sessions, matched through `pg_stat_activity`: a wait on a transaction id names no database in `pg_locks`, so a
 * filter on its column would count every database's on a shared server. `pg_locks` and `pg_stat_database` are
 * readable by any role; the ages of other roles' transactions in `pg_stat_activity` need `pg_read_all_stats`
 * (the health role is granted `pg_monitor`), otherwise they read as null and count as not long-running.
 *
 * @example
 * ```ts
 * const figures = await collectHealth(sql, { consumer: 'case-worker' });
 * if (figures.quarantine.open > 0) console.log(`${figures.quarantine.open} quarantined message(s)`);
 * ```
 */
export async function collectHealth(
  sql: postgres.Sql,
  options: CollectHealthOptions,
): Promise<HealthFigures> {
  const { statementTimeoutMs, longTransactionMs } = checkedHealthOptions(options);
  const { consumer } = options;
  return sql.begin('read only', async (tx) => {
    const [clock] = await tx<{ at: Date; database: string; timeout: string }[]>`
      select now() as at, current_database() as database,
             set_config('statement_timeout', ${settingMs(statementTimeoutMs)}, true) as timeout
    `;
    const { at, database } = clock as { at: Date; database: string };

    const [quarantine] = await tx<{ open: number; oldest: string | null }[]>`
      select count(*)::int as open,
             extract(epoch from now() - min(first_quarantined_at)) * 1000 as oldest
        from worker_quarantine
       where consumer = ${consumer} and released_at is null
    `;
    const statusRows = await tx<{ status: UnfinishedInboxStatus; count: number }[]>`
      select status, count(*)::int as count
        from worker_inbox
       where status in ${tx(UNFINISHED_INBOX_STATUSES)} and consumer = ${consumer}
       group by status
    `;
    const [inboxAges] = await tx<{ processing: string | null; retryable: string | null }[]>`
      select (select extract(epoch from now() - min(coalesce(started_at, last_seen_at))) * 1000
                from worker_inbox where status = 'PROCESSING' and consumer = ${consumer}) as processing,
             (select extract(epoch from now() - min(first_seen_at)) * 1000
                from worker_inbox where status = 'FAILED_RETRYABLE' and consumer = ${consumer}) as retryable
    `;
    const [outbox] = await tx<{ pending: number; oldest: string | null }[]>`
      select count(*)::int as pending, extract(epoch from now() - min(created_at)) * 1000 as oldest
        from outbox_events
       where status = 'PENDING'
    `;
    const [locks] = await tx<{ waiting: number; oldest: string | null }[]>`
      select count(*)::int as waiting, extract(epoch from now() - min(waitstart)) * 1000 as oldest
        from pg_locks
       where not granted and pid <> pg_backend_pid()
         and pid in (select pid from pg_stat_activity where datname = current_database())
    `;
    const [stats] = await tx<{ deadlocks: string }[]>`
      select deadlocks::text as deadlocks from pg_stat_database where datname = current_database()
    `;
    // Transactions that hold any lock on a toolkit table (a writer holds RowExclusiveLock until it ends).
    const transactions = await tx<{ pid: number; age: string | null; writesInbox: boolean }[]>`
      select a.pid, extract(epoch from now() - a.xact_start) * 1000 as age,
             bool_or(l.relation = to_regclass('worker_inbox') and l.mode = 'RowExclusiveLock') as "writesInbox"
        from pg_stat_activity a
        join pg_locks l on l.pid = a.pid and l.locktype = 'relation' and l.granted
       where a.datname = current_database() and a.pid <> pg_backend_pid()
         and l.relation in (select to_regclass(t) from unnest(${WATCHED_TABLES}::text[]) as t)
       group by a.pid, a.xact_start
    `;

    const byStatus = Object.fromEntries(UNFINISHED_INBOX_STATUSES.map((status) => [status, 0])) as Record<
      UnfinishedInboxStatus,
      number
    >;
    for (const row of statusRows) byStatus[row.status] = row.count;

    const deadlocks = deadlocksSinceLastCheck(database, Number(stats?.deadlocks ?? 0));

    const ages = transactions.map((t) => age(t.age)).filter((value): value is number => value !== null);
    const inboxWriterAges = transactions
      .filter((t) => t.writesInbox)
      .map((t) => age(t.age))
      .filter((value): value is number => value !== null);
    const oldestProcessingAgeMs = age(inboxAges?.processing ?? null);
    const inFlight = [...inboxWriterAges, ...(oldestProcessingAgeMs === null ? [] : [oldestProcessingAgeMs])];

    return {
      consumer,
      at: at.toISOString(),
      quarantine: { open: quarantine?.open ?? 0, oldestOpenAgeMs: age(quarantine?.oldest ?? null) },
      inbox: {
        byStatus,
        oldestProcessingAgeMs,
        oldestRetryableAgeMs: age(inboxAges?.retryable ?? null),
        oldestInFlightAgeMs: inFlight.length > 0 ? Math.max(...inFlight) : null,
      },
      outbox: { pending: outbox?.pending ?? 0, oldestPendingAgeMs: age(outbox?.oldest ?? null) },
      locks: { waiting: locks?.waiting ?? 0, oldestWaitMs: age(locks?.oldest ?? null) },
      deadlocks,
      longTransactions: {
        count: ages.filter((value) => value >= longTransactionMs).length,
        oldestAgeMs: ages.length > 0 ? Math.max(...ages) : null,
      },
    };
  });
}

/** The statement timeout (100–60000 ms) and the long-transaction threshold (0–3600000 ms), checked. */
function checkedHealthOptions(options: CollectHealthOptions): {
  statementTimeoutMs: number;
  longTransactionMs: number;
} {
  const statementTimeoutMs = options.statementTimeoutMs ?? 5000;
  const longTransactionMs = options.longTransactionMs ?? 30_000;
  if (!Number.isInteger(statementTimeoutMs) || statementTimeoutMs < 100 || statementTimeoutMs > 60_000) {
    throw new RangeError(
      `statementTimeoutMs must be a whole number from 100 to 60000 (given ${statementTimeoutMs}); pass a value in that range`,
    );
  }
  if (!Number.isInteger(longTransactionMs) || longTransactionMs < 0 || longTransactionMs > 3_600_000) {
    throw new RangeError(
      `longTransactionMs must be a whole number from 0 to 3600000 (given ${longTransactionMs}); pass a value in that range`,
    );
  }
  return { statementTimeoutMs, longTransactionMs };
}

/**
 * Deadlocks since this environment's previous check of `database`, from the database's counter. The first check, or
 * one after the statistics were reset, has no interval to measure yet: 0.
 */
function deadlocksSinceLastCheck(database: string, counter: number): number {
  const previous = previousDeadlocks.get(database);
  previousDeadlocks.set(database, counter);
  return previous === undefined || counter < previous ? 0 : counter - previous;
}
