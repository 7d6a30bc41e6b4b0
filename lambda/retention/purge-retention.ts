import type postgres from 'postgres';
import { settingMs } from '../postgres/setting-ms.ts';
import { checkInboxRetention, type QueueRetentions } from './retention-guard.ts';

/** What the retention job removes, one entry per table. */
export type RetentionTarget = 'inbox' | 'outbox' | 'effectLog' | 'quarantine';

/** Options of {@link purgeRetention}. Windows are seconds before now; an omitted window skips its table. */
export interface PurgeRetentionOptions {
  /** Inbox namespace whose COMPLETED rows are purged. */
  readonly consumer: string;
  /** The queues' retentions: the inbox and effect-log windows must be at least their sum. */
  readonly retentions: QueueRetentions;
  /** COMPLETED inbox rows whose completion and last sighting are older than this. */
  readonly inboxSeconds?: number;
  /** PUBLISHED outbox rows published before this. */
  readonly outboxSeconds?: number;
  /**
   * Settled effect-log rows (COMPLETED, FAILED_TERMINAL) last updated before this; a row that a domain table
   * still references (a foreign key, such as the example `case_notifications`) is kept.
   */
  readonly effectLogSeconds?: number;
  /** Released quarantine entries released before this. */
  readonly quarantineSeconds?: number;
  /** Rows per delete statement, 1 – 10000. @default 1000 */
  readonly batchSize?: number;
  /** Epoch milliseconds after which no new batch starts (the batch running finishes). */
  readonly deadline: number;
  /** Server-side bound of one batch. @default 10000 */
  readonly statementTimeoutMs?: number;
  /**
   * Share of the run the job may spend inside a batch, above 0 to 1: after a batch that took `t` ms it pauses
   * `t × (1 / dutyCycle − 1)` ms, so the purge leaves the database (CPU, WAL, I/O) to the worker for the rest and
   * slows down by itself when the database is busy (slower batches, longer pauses). @default 0.5
   */
  readonly dutyCycle?: number;
  /** Current time in epoch milliseconds. @default Date.now */
  readonly now?: () => number;
}

/** What {@link purgeRetention} removed. */
export interface PurgeRetentionResult {
  /** Rows removed per table. */
  readonly removed: Readonly<Record<RetentionTarget, number>>;
  /** Delete statements run. */
  readonly batches: number;
  /** False when the time budget ran out with rows still due: the next run continues. */
  readonly complete: boolean;
}

/**
 * The scheduled retention purge: deletes rows nobody needs any more, in small batches, until nothing is due or
 * the time budget (`deadline`) is spent.
 *
 * - COMPLETED inbox rows of `consumer` finished and last seen before the inbox window;
 * - PUBLISHED outbox rows published before the outbox window;
 * - settled effect-log rows (COMPLETED, FAILED_TERMINAL) not referenced by a domain row;
 * - released quarantine entries released before the quarantine window.
 *
 * Each batch is one short transaction: its rows are chosen with `for update skip locked` (a row a worker holds,
 * such as a duplicate claim on a COMPLETED row, is skipped rather than waited for), deleted by key, and the
 * statement is bounded by `statementTimeoutMs`. No table-wide delete, no lock held between batches.
 *
 * Refuses (before deleting anything) an inbox or effect-log window shorter than source + DLQ retention:
 * the same guard as `sqs-worker inbox purge` ({@link checkInboxRetention}).
 *
 * @throws RetentionWindowError when a window is shorter than the retentions allow.
 */
export async function purgeRetention(
  sql: postgres.Sql,
  options: PurgeRetentionOptions,
): Promise<PurgeRetentionResult> {
  if (options.inboxSeconds !== undefined) {
    checkInboxRetention(options.inboxSeconds, options.retentions, 'inboxRetention');
  }
  if (options.effectLogSeconds !== undefined) {
    checkInboxRetention(options.effectLogSeconds, options.retentions, 'effectLogRetention');
  }
  const { batchSize, dutyCycle } = checkedPace(options);
  const now = options.now ?? Date.now;
  const statementTimeout = settingMs(options.statementTimeoutMs ?? 10_000);
  const cutoff = (seconds: number) => new Date(now() - seconds * 1000);
  const removed: Record<RetentionTarget, number> = { inbox: 0, outbox: 0, effectLog: 0, quarantine: 0 };
  let batches = 0;
  let complete = true;

  /** Runs `batch` until it deletes fewer than `batchSize` rows or the budget is spent. */
  const drain = async (
    target: RetentionTarget,
    batch: (tx: postgres.TransactionSql) => Promise<postgres.RowList<postgres.Row[]>>,
  ) => {
    for (;;) {
      if (now() >= options.deadline) {
        complete = false;
        return;
      }
      const started = performance.now();
      const result = await sql.begin(async (tx) => {
        await tx`select set_config('statement_timeout', ${statementTimeout}, true)`;
        return batch(tx);
      });
      batches += 1;
      removed[target] += result.count;
      if (result.count < batchSize) return;
      const pauseMs = (performance.now() - started) * (1 / dutyCycle - 1);
      if (pauseMs >= 1) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  };

  if (options.inboxSeconds !== undefined) {
    const before = cutoff(options.inboxSeconds);
    await drain('inbox', (tx) => deleteCompletedInboxBatch(tx, options.consumer, before, batchSize));
  }
  if (options.outboxSeconds !== undefined) {
    const before = cutoff(options.outboxSeconds);
    await drain('outbox', (tx) => deletePublishedOutboxBatch(tx, before, batchSize));
  }
  if (options.effectLogSeconds !== undefined) {
    const before = cutoff(options.effectLogSeconds);
    const references = await effectLogReferences(sql);
    await drain('effectLog', (tx) => deleteSettledEffectBatch(tx, { before, batchSize, references }));
  }
  if (options.quarantineSeconds !== undefined) {
    const before = cutoff(options.quarantineSeconds);
    await drain('quarantine', (tx) => deleteReleasedQuarantineBatch(tx, options.consumer, before, batchSize));
  }
  return { removed, batches, complete };
}

/** The batch size (1–10000) and the duty cycle (0–1], checked. */
function checkedPace(options: PurgeRetentionOptions): { batchSize: number; dutyCycle: number } {
  const batchSize = options.batchSize ?? 1000;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) {
    throw new RangeError(
      `batchSize must be a whole number from 1 to 10000 (given ${batchSize}); pass a value in that range`,
    );
  }
  const dutyCycle = options.dutyCycle ?? 0.5;
  if (!(dutyCycle > 0 && dutyCycle <= 1)) {
    throw new RangeError(
      `dutyCycle must be above 0 and at most 1 (given ${dutyCycle}); pass a value in that range`,
    );
  }
  return { batchSize, dutyCycle };
}

// Each table's batch is a materialized CTE: it runs the LIMIT once; `in (select … limit n)` may be re-planned as a join.

/** One batch of PUBLISHED outbox rows older than `before`. */
function deletePublishedOutboxBatch(tx: postgres.TransactionSql, before: Date, batchSize: number) {
  return tx`
    with batch as materialized (
      select event_id from outbox_events
       where status = 'PUBLISHED' and published_at < ${before}
       limit ${batchSize}
         for update skip locked
    )
    delete from outbox_events o using batch where o.event_id = batch.event_id
  `;
}

/**
 * One batch of settled effect-log rows older than `before`. Rows a domain table still points at stay: deleting them
 * would fail the foreign key (or cascade).
 */
function deleteSettledEffectBatch(
  tx: postgres.TransactionSql,
  batch: { before: Date; batchSize: number; references: readonly { table: string; column: string }[] },
) {
  const kept = batch.references.map(
    ({ table, column }) =>
      tx`and not exists (select 1 from ${tx(table)} r where r.${tx(column)} = e.effect_key)`,
  );
  const unreferenced = kept.reduce((clauses, clause) => tx`${clauses} ${clause}`, tx``);
  return tx`
    with batch as materialized (
      select effect_key from external_effect_log e
       where status in ('COMPLETED', 'FAILED_TERMINAL') and updated_at < ${batch.before} ${unreferenced}
       limit ${batch.batchSize}
         for update skip locked
    )
    delete from external_effect_log e using batch where e.effect_key = batch.effect_key
  `;
}

/** One batch of a consumer's quarantine rows released before `before`. */
function deleteReleasedQuarantineBatch(
  tx: postgres.TransactionSql,
  consumer: string,
  before: Date,
  batchSize: number,
) {
  return tx`
    with batch as materialized (
      select quarantine_id from worker_quarantine
       where consumer = ${consumer} and released_at < ${before}
       limit ${batchSize}
         for update skip locked
    )
    delete from worker_quarantine q using batch where q.quarantine_id = batch.quarantine_id
  `;
}

/**
 * The single-column foreign keys that reference `external_effect_log.effect_key` (domain tables such as the
 * example `case_notifications`), read from the catalog so the toolkit needs no list of domain tables.
 *
 * @internal
 */
export async function effectLogReferences(
  sql: postgres.Sql | postgres.TransactionSql,
): Promise<Array<{ table: string; column: string }>> {
  return sql<{ table: string; column: string }[]>`
    select c.conrelid::regclass::text as table, a.attname as column
      from pg_constraint c
      join pg_attribute a on a.attrelid = c.conrelid and a.attnum = c.conkey[1]
     where c.contype = 'f' and c.confrelid = to_regclass('external_effect_log')
       and array_length(c.conkey, 1) = 1
  `;
}

/**
 * Deletes at most `batchSize` COMPLETED inbox rows of `consumer` finished and last seen before `before`, skipping
 * rows another transaction holds: one batch of the scheduled retention job and of `sqs-worker inbox purge`. A
 * materialized CTE runs the LIMIT once; `in (select … limit n)` may be re-planned as a join.
 *
 * @internal
 */
export function deleteCompletedInboxBatch(
  sql: postgres.Sql | postgres.TransactionSql,
  consumer: string,
  before: Date,
  batchSize: number,
): Promise<postgres.RowList<postgres.Row[]>> {
  return sql`
    with batch as materialized (
      select consumer, idempotency_key from worker_inbox
       where consumer = ${consumer} and status = 'COMPLETED'
         and completed_at < ${before} and last_seen_at < ${before}
       limit ${batchSize}
         for update skip locked
    )
    delete from worker_inbox w
     using batch
     where w.consumer = batch.consumer and w.idempotency_key = batch.idempotency_key
  `;
}
