import { performance } from 'node:perf_hooks';
import type { SQSRecord } from 'aws-lambda';
import postgres from 'postgres';
import { purgeRetention } from '../../lambda/retention/purge-retention.ts';
import { BATCH_SIZE } from './bench-config.ts';
import { caseIds, chunk, deadlineRecords } from './bench-messages.ts';
import type { LaneThreads } from './lane-threads.ts';
import type { Lane } from './run-lanes.ts';
import { seedInboxRows } from './seed-inbox-rows.ts';

const DAY = 86_400;
/** Queue retentions of the stack's defaults (source 4 days, DLQ 14 days): the inbox guard is 18 days. */
const RETENTIONS = { sourceRetentionSeconds: 4 * DAY, dlqRetentionSeconds: 14 * DAY };
/** The stack's default inbox window: source + DLQ retention + 1 day. */
const INBOX_SECONDS = 19 * DAY;
/** Age of the seeded rows, well past the window. */
const SEEDED_AGE_DAYS = 30;
/** Inbox namespace of the seeded rows: the purge touches nothing else (the worker writes as `bench-worker`). */
export const PURGE_CONSUMER = 'bench-retention';
/** Time budget of one purge run (the Lambda's is minutes; short runs alternate with worker-only segments). */
const PURGE_RUN_MS = 500;
/** Length of a worker-only segment between two purge runs. */
const ALONE_SEGMENT_MS = 500;
/** Rows per delete statement: the retention job's default (`RETENTION_BATCH_SIZE`). */
const PURGE_BATCH_SIZE = 1000;
/** Share of a run spent deleting: `purgeRetention`'s default, which the retention Lambda uses. */
const PURGE_DUTY_CYCLE = 0.5;
/** Cases created at a time for the worker's messages, outside the timed segments. */
const CASES_PER_REFILL = 5000;

/** `worker_inbox`'s size and rows at one point of the measurement. */
export interface InboxSize {
  readonly label: string;
  /** `pg_total_relation_size`: heap, indexes and TOAST, bytes. */
  readonly totalBytes: number;
  /** `pg_relation_size`: the heap alone, bytes. */
  readonly heapBytes: number;
  /** `pg_indexes_size`, bytes. */
  readonly indexBytes: number;
  /** Every row of the table (all consumers). */
  readonly rows: number;
}

/** What {@link benchRetentionPurge} measured. */
export interface RetentionPurgeResult {
  readonly rows: number;
  readonly batchSize: number;
  readonly dutyCycle: number;
  /** Rows the purge removed (all of `rows` when it completed). */
  readonly removed: number;
  readonly batches: number;
  /** Purge runs of {@link PURGE_RUN_MS} budget it took. */
  readonly runs: number;
  /** Wall-clock time of the purge runs together (each from its start until it returned), ms. */
  readonly purgeMs: number;
  /** Worker msgs/s in the worker-only segments and during the purge runs. */
  readonly aloneMessagesPerSecond: number;
  readonly purgingMessagesPerSecond: number;
  readonly workerMessages: number;
  /** Sizes before seeding, seeded, after the purge, after a plain VACUUM, and after seeding `rows` again. */
  readonly sizes: readonly InboxSize[];
  /** Autovacuum runs on worker_inbox between the end of seeding and the bench's own VACUUM. */
  readonly autovacuumsDuringPurge: number;
  /** The server's autovacuum settings: on/off, naptime, and the dead rows that trigger it (threshold + factor × rows). */
  readonly autovacuum: {
    readonly enabled: boolean;
    readonly naptime: string;
    readonly threshold: number;
    readonly scaleFactor: number;
  };
}

/** A client as the retention Lambda has it (pool of 1, `prepare: false`). */
function purgeClient(url: string): postgres.Sql {
  return postgres(url, {
    prepare: false,
    max: 1,
    onnotice: () => {},
    connection: { application_name: 'sqs-inbox-worker-bench-retention' },
  });
}

async function inboxSize(admin: postgres.Sql, label: string): Promise<InboxSize> {
  const [row] = await admin<{ total: string; heap: string; indexes: string; rows: number }[]>`
    select pg_total_relation_size('worker_inbox') as total, pg_relation_size('worker_inbox') as heap,
           pg_indexes_size('worker_inbox') as indexes, (select count(*)::int from worker_inbox) as rows
  `;
  return {
    label,
    totalBytes: Number(row?.total),
    heapBytes: Number(row?.heap),
    indexBytes: Number(row?.indexes),
    rows: row?.rows ?? 0,
  };
}

async function autovacuumCount(admin: postgres.Sql): Promise<number> {
  // Statistics are flushed by each backend within a second or so; ask for a fresh snapshot.
  await admin`select pg_stat_clear_snapshot()`;
  const [row] = await admin<{ n: number }[]>`
    select autovacuum_count::int as n from pg_stat_user_tables where relid = 'worker_inbox'::regclass
  `;
  return row?.n ?? 0;
}

/**
 * The retention purge line of the bench: seeds `rows` COMPLETED inbox rows 30 days old under
 * {@link PURGE_CONSUMER} ({@link seedInboxRows}, as the retention test does), then alternates worker-only
 * segments ({@link ALONE_SEGMENT_MS}) with runs of the real {@link purgeRetention} (as the retention Lambda runs it:
 * batches of 1000, duty cycle 0.5; a budget of {@link PURGE_RUN_MS} each, the next run continuing) during which the worker keeps
 * going, until the purge is complete. The worker is one simulated Lambda environment on a lane thread (the
 * bench's `per-message` worker, its `CaseDeadlineCalculationRequested` messages); alternating short segments
 * compares both rates under the same load of this shared machine. `worker_inbox`'s size is read before seeding,
 * before and after the purge, after a plain `VACUUM worker_inbox` (not FULL) and a second one, and after seeding
 * `rows` again (is the freed space reused?); the rows seeded are deleted at the end.
 *
 * @internal
 */
export async function benchRetentionPurge(input: {
  rows: number;
  runId: string;
  admin: postgres.Sql;
  url: string;
  threads: LaneThreads;
  log: (line: string) => void;
}): Promise<RetentionPurgeResult> {
  const { admin, rows } = input;
  const prefix = `purge-${input.runId}:`;
  const settings = await autovacuumSettings(admin);
  const sizes: InboxSize[] = [await inboxSize(admin, 'before seeding')];
  await seedInboxRows(admin, PURGE_CONSUMER, prefix, rows, { ageDays: SEEDED_AGE_DAYS });
  await admin`vacuum analyze worker_inbox, cases, case_deadlines`;
  await admin`checkpoint`;
  sizes.push(await inboxSize(admin, `${rows} old rows seeded (before the purge)`));
  const autovacuumsBefore = await autovacuumCount(admin);

  const [lane] = (await input.threads.open(1, 'per-message', input.url)) as [Lane];
  const purgeSql = purgeClient(input.url);
  const segments = new PurgeSegments(admin, lane, purgeSql, input.runId);
  try {
    await segments.run((removed) => input.log(`  purge: ${removed} of ${rows} rows removed`));
  } finally {
    await lane.close();
    await purgeSql.end({ timeout: 5 });
  }
  sizes.push(await inboxSize(admin, 'after the purge'));
  const autovacuumsDuringPurge = (await autovacuumCount(admin)) - autovacuumsBefore;
  sizes.push(...(await vacuumAndReseed(admin, prefix, rows)));
  await admin`delete from worker_inbox where consumer = ${PURGE_CONSUMER} and idempotency_key like ${`${prefix}%`}`;

  const { totals, rates } = segments;
  return {
    rows,
    batchSize: PURGE_BATCH_SIZE,
    dutyCycle: PURGE_DUTY_CYCLE,
    removed: totals.removed,
    batches: totals.batches,
    runs: totals.runs,
    purgeMs: segments.purgeMs,
    aloneMessagesPerSecond: rates.alone.messages / (rates.alone.ms / 1000),
    purgingMessagesPerSecond: rates.purging.messages / (rates.purging.ms / 1000),
    workerMessages: segments.workerMessages,
    sizes,
    autovacuumsDuringPurge,
    autovacuum: settings,
  };
}

/** The server's autovacuum settings, as {@link RetentionPurgeResult.autovacuum} reports them. */
async function autovacuumSettings(admin: postgres.Sql): Promise<RetentionPurgeResult['autovacuum']> {
  const [settings] = await admin<
    { autovacuum: string; naptime: string; threshold: string; scaleFactor: string }[]
  >`
    select current_setting('autovacuum') as autovacuum, current_setting('autovacuum_naptime') as naptime,
           current_setting('autovacuum_vacuum_threshold') as threshold,
           current_setting('autovacuum_vacuum_scale_factor') as "scaleFactor"
  `;
  return {
    enabled: settings?.autovacuum === 'on',
    naptime: settings?.naptime ?? '?',
    threshold: Number(settings?.threshold),
    scaleFactor: Number(settings?.scaleFactor),
  };
}

/** After the purge: the sizes after a plain VACUUM, a second one, and after seeding `rows` again. */
async function vacuumAndReseed(admin: postgres.Sql, prefix: string, rows: number): Promise<InboxSize[]> {
  const sizes: InboxSize[] = [];
  await admin`vacuum worker_inbox`;
  sizes.push(await inboxSize(admin, 'after VACUUM worker_inbox'));
  // B-tree pages a VACUUM deletes are recycled by a later one, once every transaction that might still reach them
  // has ended: a page is stamped with the next transaction id, so one transaction id must be handed out in between
  // (on a live database the worker's writes do that; here nothing else writes).
  await admin`select pg_current_xact_id()`;
  await admin`vacuum worker_inbox`;
  sizes.push(await inboxSize(admin, 'after a second VACUUM'));
  await seedInboxRows(admin, PURGE_CONSUMER, `${prefix}again:`, rows, { ageDays: SEEDED_AGE_DAYS });
  sizes.push(await inboxSize(admin, `${rows} rows inserted again`));
  return sizes;
}

/**
 * The timed part of the line: worker-only segments alternating with purge runs during which the worker keeps
 * going, until the purge is complete. The worker's messages are made ahead of each segment, so
 * creating cases stays outside the timings.
 */
class PurgeSegments {
  readonly rates = { alone: { messages: 0, ms: 0 }, purging: { messages: 0, ms: 0 } };
  readonly totals = { removed: 0, batches: 0, runs: 0, complete: false };
  workerMessages = 0;
  purgeMs = 0;
  readonly #admin: postgres.Sql;
  readonly #lane: Lane;
  readonly #purgeSql: postgres.Sql;
  readonly #runId: string;
  readonly #pending: SQSRecord[][] = [];
  #refills = 0;
  #mostBatchesInASegment = 0;

  constructor(admin: postgres.Sql, lane: Lane, purgeSql: postgres.Sql, runId: string) {
    this.#admin = admin;
    this.#lane = lane;
    this.#purgeSql = purgeSql;
    this.#runId = runId;
  }

  /** Warms up, then alternates the segments until the purge completed; `progress` every 5 runs. */
  async run(progress: (removed: number) => void): Promise<void> {
    await this.#topUp();
    for (let index = 0; index < 5; index += 1) await this.#nextBatch(); // warm-up: connection, plans
    while (!this.totals.complete) {
      await this.#topUp();
      await this.#aloneSegment();
      await this.#topUp();
      await this.#purgeRun();
      if (this.totals.runs % 5 === 0) progress(this.totals.removed);
    }
  }

  async #aloneSegment(): Promise<void> {
    const started = performance.now();
    const before = this.#pending.length;
    while (performance.now() - started < ALONE_SEGMENT_MS)
      this.rates.alone.messages += await this.#nextBatch();
    this.rates.alone.ms += performance.now() - started;
    this.#mostBatchesInASegment = Math.max(this.#mostBatchesInASegment, before - this.#pending.length);
  }

  async #purgeRun(): Promise<void> {
    const runStarted = performance.now();
    const before = this.#pending.length;
    let purgeDone = false;
    const run = purgeRetention(this.#purgeSql, {
      consumer: PURGE_CONSUMER,
      retentions: RETENTIONS,
      inboxSeconds: INBOX_SECONDS,
      batchSize: PURGE_BATCH_SIZE,
      dutyCycle: PURGE_DUTY_CYCLE,
      deadline: Date.now() + PURGE_RUN_MS,
    }).finally(() => {
      purgeDone = true;
      this.purgeMs += performance.now() - runStarted;
    });
    while (!purgeDone) this.rates.purging.messages += await this.#nextBatch();
    const { removed, batches, complete } = await run;
    this.rates.purging.ms += performance.now() - runStarted;
    this.#mostBatchesInASegment = Math.max(this.#mostBatchesInASegment, before - this.#pending.length);
    this.totals.removed += removed.inbox;
    this.totals.batches += batches;
    this.totals.runs += 1;
    this.totals.complete = complete;
  }

  async #refill(): Promise<void> {
    this.#refills += 1;
    const admin = this.#admin;
    const block = `bench-${this.#runId}-purge-b${this.#refills}`;
    await admin`
      insert into cases (case_id, stage, version)
      select case_id, 'INVESTIGATION', 1 from unnest(${admin.array(caseIds(block, CASES_PER_REFILL))}::text[]) as case_id
    `;
    this.#pending.push(...chunk(deadlineRecords(block, CASES_PER_REFILL), BATCH_SIZE));
  }

  async #nextBatch(): Promise<number> {
    if (this.#pending.length === 0) await this.#refill(); // only when a segment outran the refill below
    const batch = this.#pending.shift() as SQSRecord[];
    await this.#lane.process(batch);
    this.workerMessages += batch.length;
    return batch.length;
  }

  async #topUp(): Promise<void> {
    while (this.#pending.length < 2 * this.#mostBatchesInASegment + 50) await this.#refill();
  }
}
