/**
 * The worker's store as the `sqs-worker` commands see it: the one contract between the commands and a store. The
 * CLI picks the store once, from `--store` / `WORKER_STORE` or a smoke run's stage (`stores/open-ops-store.ts`), and
 * every command runs against the {@link OpsStore} it gets; no command asks which store it has.
 */
import type postgres from 'postgres';
import type { HealthFigures } from '../../lambda/health/collect-health.ts';
import type { CapacityInputs, CapacityResult } from '../../lib/stores/postgres/capacity.ts';
import type { CanaryStore } from './canary-store.ts';
import type { Clock } from './clock.ts';
import type { SqsSender } from './collaborators.ts';
import type { EditedBodyInput } from './edited-release.ts';
import type { UsageError } from './errors.ts';
import type { InboxCancelResult } from './inbox-cancel-result.ts';
import type { OpsOutput } from './output.ts';
import type { QuarantineFilter } from './quarantine-filter.ts';
import type { QuarantineReleaseResult } from './quarantine-release-result.ts';
import type { InboxHotResult } from './render-inbox-hot.ts';
import type { InboxStatsResult } from './render-inbox-stats.ts';
import type { QuarantineShowResult } from './render-quarantine-entry.ts';
import type { QuarantineListResult } from './render-quarantine-list.ts';
import type { TrendWindow } from './trend-window.ts';

/** The stores a worker runs on. */
export type StoreKind = 'postgres' | 'dynamodb';

/**
 * A store behind the ops commands. Two kinds of members:
 *
 * - the store's own commands (`inboxShow`, `quarantineRelease`, `health`, …): each runs the whole command against
 *   the store and prints its result through `deps.out`, as `sqs-worker <command>` does;
 * - capabilities the store-neutral commands (`queue status`, `dlq peek|redrive|move-task`, `smoke`, `capacity`) call:
 *   each is asked for first, before the command touches a queue, so a store that lacks it refuses before anything
 *   happened.
 *
 * A store that cannot do a command (the DynamoDB store has no `health` or `inbox purge`)
 * says so once, in the store: {@link OpsStore.refusal} names the command, the store and what to use instead, and
 * `runOpsCommand` asks it before the command runs; the member itself throws the same refusal when called from a
 * script. Clients open on first use: a command that never reads the store needs none of its settings.
 *
 * A third store is a folder under `tools/ops/stores/` whose index gives a function returning one of these, and a
 * line in `open-ops-store.ts`.
 */
export interface OpsStore {
  readonly kind: StoreKind;
  /**
   * The refusal of a command this store cannot do (`sqs-worker <command>`, as `dlq redrive`): a UsageError (exit 2)
   * naming the command, the store and what to use instead; undefined when the store can do it.
   */
  refusal(command: string): UsageError | undefined;

  /**
   * `inbox show <key>`: the inbox entry of one idempotency key, its quarantine entries (and on PostgreSQL the operator
   * actions recorded for it).
   *
   * @throws OperationError (exit 1) when the key is neither in the inbox nor in quarantine.
   */
  inboxShow(
    deps: { readonly out: OpsOutput },
    options: { readonly consumer: string; readonly idempotencyKey: string },
  ): Promise<InboxShowReport>;
  /**
   * `inbox cancel <key>`: marks a key that is not COMPLETED cancelled (an unknown key too: a marker), audited; any copy
   * of it in flight or arriving later is then quarantined with reason CANCELLED, never applied.
   *
   * @throws OperationError (exit 1) when the key is COMPLETED (its effect exists), or a copy in flight completed it.
   */
  inboxCancel(
    deps: { readonly out: OpsOutput; readonly clock: Clock },
    options: {
      readonly consumer: string;
      readonly idempotencyKey: string;
      readonly reason?: string | undefined;
      readonly actor?: string;
    },
  ): Promise<InboxCancelResult>;
  /** `inbox stats`: counts by status and failure code, the oldest FAILED_RETRYABLE, completions in the last hour. */
  inboxStats(
    deps: { readonly out: OpsOutput; readonly clock: Clock },
    options: { readonly consumer: string },
  ): Promise<InboxStatsResult>;
  /**
   * `inbox hot`: the aggregates and keys holding the most retries, claims in flight and lock waits among the keys
   * seen in the window (DynamoDB: from a Scan bounded by `scanLimit` items, said partial when it stops early).
   */
  inboxHot(
    deps: { readonly out: OpsOutput; readonly clock: Clock },
    options: InboxHotOptions,
  ): Promise<InboxHotResult>;
  /**
   * `inbox purge`: deletes COMPLETED inbox entries older than a window no shorter than source + DLQ retention.
   *
   * @throws UsageError (exit 2) when the window is too short, or the store keeps no purgeable inbox (DynamoDB: TTL).
   */
  inboxPurge(
    deps: { readonly out: OpsOutput; readonly clock: Clock; readonly sqs?: SqsSender | undefined },
    options: InboxPurgeOptions,
  ): Promise<InboxPurgeResult>;
  /** `health`: the figures the scheduled health job publishes, read now. */
  health(deps: { readonly out: OpsOutput }, options: HealthOptions): Promise<HealthFigures>;

  /**
   * `quarantine list`: unreleased (or all) entries of a consumer matching the filter, newest first (or, with
   * `oldestFirst`, oldest first: the order `quarantine release --all` releases in), without bodies; with `group`, also
   * the count of every matching entry (not only the listed ones) by reason code and the first-seen version of its key.
   */
  quarantineList(
    deps: { readonly out: OpsOutput },
    options: QuarantineListOptions,
  ): Promise<QuarantineListResult>;
  /**
   * `quarantine show <id>`: one entry WITH ITS BODY (payload values, on purpose) and the newer completed events of its
   * aggregate.
   */
  quarantineShow(
    deps: { readonly out: OpsOutput },
    options: { readonly consumer: string; readonly quarantineId: string },
  ): Promise<QuarantineShowResult>;
  /**
   * `quarantine release <id>`: re-sends a quarantined message to the source queue, re-arms its inbox entry and marks
   * it released, audited; refuses (without `force`) when newer events of its aggregate have completed.
   */
  quarantineRelease(
    deps: { readonly sqs: SqsSender; readonly out: OpsOutput; readonly clock: Clock },
    options: QuarantineReleaseOptions,
  ): Promise<QuarantineReleaseResult>;

  /**
   * `capacity`: the store's formula of the safe worker concurrency (connections for PostgreSQL, the write budget for
   * DynamoDB), from the flags as given; `capacity-command.ts` has checked that no flag of another store's formula is
   * among them.
   */
  capacity(deps: { readonly out: OpsOutput }, input: CapacityInput): CapacityResult;
  /**
   * `smoke`: the canaries' state in this store, and (PostgreSQL) the ops client for the checks of the database
   * itself (the worker role's privileges, its sessions, its proxy).
   */
  smokeStore(consumer: string): SmokeStore;
  /**
   * `dlq peek` and `dlq redrive`: the inbox of the DLQ's keys, and the audit and re-arm of a redrive.
   *
   * @param command the command asking, named in a refusal.
   * @throws UsageError (exit 2) naming the command, the store and what to use instead, when the store has none.
   */
  dlqInbox(command: string): DlqInbox;
  /**
   * `queue status`: the reader of the oldest unfinished inbox entry; undefined when this store does not read it
   * (PostgreSQL without a database URL, DynamoDB).
   */
  unfinishedInbox(): UnfinishedInbox | undefined;
  /**
   * `queue trend`: the consumer side of the window from the inbox, per period (arrivals, completions, failures,
   * p50/p99) and per message type. DynamoDB answers with a bounded scan of the table (`scan` says how far it read).
   */
  inboxTrend(options: { readonly consumer: string; readonly window: TrendWindow }): Promise<InboxTrend>;
  /**
   * `dlq move-task start|cancel`: the audit trail; undefined when the store keeps none for these (PostgreSQL without a
   * database URL, DynamoDB).
   */
  auditTrail(): AuditTrail | undefined;

  /**
   * What the operator should read of an error a command failed with, when it comes from this store's client (a
   * connection that failed, a rejected login, a permission denied): the setting and host to check and the fix;
   * undefined when the error is not the store's.
   */
  describeError(error: unknown): DescribedError | undefined;
  /** Closes the clients the store opened (none when it was not used). */
  close(): Promise<void>;
}

/** What `inbox show` reports on any store (each store adds its own fields). */
export interface InboxShowReport {
  readonly consumer: string;
  readonly idempotencyKey: string;
  /** The inbox row or item, without keys and tokens; null when the key has only quarantine entries. */
  readonly inbox: object | null;
  readonly quarantine: readonly object[];
}

/** Options of {@link OpsStore.quarantineList}. */
export interface QuarantineListOptions extends QuarantineFilter {
  readonly consumer: string;
  readonly includeReleased?: boolean;
  /** At most this many entries. @default 50 */
  readonly limit?: number;
  /** Oldest (by last quarantined) first instead of newest first. */
  readonly oldestFirst?: boolean;
  /** Also count every matching entry by reason code and the first-seen version of its key. */
  readonly group?: boolean;
}

/** Options of {@link OpsStore.inboxHot}. */
export interface InboxHotOptions {
  readonly consumer: string;
  /** Aggregates (and keys) listed at most. */
  readonly limit: number;
  /** Keys last seen in this many seconds. */
  readonly sinceSeconds: number;
  /** DynamoDB: items the Scan reads at most (ignored by PostgreSQL, which reads by query). */
  readonly scanLimit: number;
}

/** Options of {@link OpsStore.quarantineRelease}. */
export interface QuarantineReleaseOptions {
  readonly quarantineId: string;
  readonly queueUrl: string;
  readonly consumer: string;
  readonly actor?: string;
  readonly force?: boolean;
  /**
   * `--edit <file>`: send this corrected body instead, under the next version of the key (`<key>:v2`, …), leaving
   * the original key's inbox entry as it is; `forceEdit` lets it change the messageType or aggregate.
   */
  readonly edit?: EditedBodyInput | undefined;
  readonly forceEdit?: boolean;
}

/** Options of {@link OpsStore.inboxPurge}. */
export interface InboxPurgeOptions {
  readonly consumer: string;
  /** Delete COMPLETED rows whose completion and last sighting are older than this many seconds. */
  readonly olderThanSeconds: number;
  /** Source queue retention in seconds; read from the queue's MessageRetentionPeriod when not given. */
  readonly sourceRetentionSeconds?: number | undefined;
  /** DLQ retention in seconds; read from the DLQ's MessageRetentionPeriod when not given. */
  readonly dlqRetentionSeconds?: number | undefined;
  /** Needed when a retention is not given. */
  readonly queueUrl?: string | undefined;
  readonly dlqUrl?: string | undefined;
  /** Rows per delete statement. @default 1000 */
  readonly batchSize?: number;
  /** Count what would be deleted; delete nothing. */
  readonly dryRun?: boolean;
  readonly actor?: string;
}

/** Result of {@link OpsStore.inboxPurge}. */
export interface InboxPurgeResult {
  readonly consumer: string;
  readonly cutoff: string;
  readonly olderThanSeconds: number;
  readonly sourceRetentionSeconds: number;
  readonly dlqRetentionSeconds: number;
  readonly dryRun: boolean;
  /** Rows deleted (or, in a dry run, that would be). */
  readonly deleted: number;
  readonly batches: number;
}

/** Options of {@link OpsStore.health}. */
export interface HealthOptions {
  readonly consumer: string;
  /** A transaction on the toolkit's tables older than this counts as long-running. @default 30000 */
  readonly longTransactionMs?: number;
}

/** The inputs both stores' capacity formulas share. */
export type SharedCapacityInputs = Pick<
  CapacityInputs,
  'downstreamRateLimit' | 'callsPerMessage' | 'lockContentionSafeParallelism'
>;

/** What {@link OpsStore.capacity} gets: the shared inputs, parsed, and the flags of the store's own formula, as given. */
export interface CapacityInput {
  readonly shared: SharedCapacityInputs;
  /** commander's camel-cased option values (`dbMaxConnections: '90'`, `maxWriteUnitsPerSecond: '4000'`, …). */
  readonly flags: Readonly<Record<string, unknown>>;
}

/** What `smoke` reads and removes in the store, and what it checks of the database behind it. */
export interface SmokeStore {
  readonly canaries: CanaryStore;
  /** PostgreSQL: the ops client, for the worker role's privileges and (locally) its sessions; absent otherwise. */
  readonly sql?: postgres.Sql;
}

/** An inbox entry as the DLQ commands join it to a message. */
export interface InboxState {
  readonly status: string;
  readonly failureCode: string | null;
  /** Business attempts counted so far. */
  readonly attempts: number;
  /** The worker version that first saw the key; null for an entry written before the inbox kept versions. */
  readonly firstVersion: string | null;
}

/** The inbox of the DLQ's keys: what `dlq peek` joins, and what `dlq redrive` audits and re-arms. */
export interface DlqInbox {
  /** The inbox entry of each of `keys` that has one (one read). */
  states(consumer: string, keys: readonly string[]): Promise<ReadonlyMap<string, InboxState>>;
  /**
   * Re-arms the failed inbox entry of a key (FAILED_TERMINAL or FAILED_RETRYABLE → FAILED_RETRYABLE with a fresh
   * attempt budget) around `send`: the re-arm is kept only when `send` resolves, and a worker that receives the copy
   * before that sees it re-armed. Resolves to whether the entry was re-armed.
   */
  rearmAround(
    key: { readonly consumer: string; readonly idempotencyKey: string },
    send: () => Promise<void>,
  ): Promise<boolean>;
  /** The audit trail of each message moved. */
  readonly audit: AuditTrail;
}

/** The oldest unfinished inbox entry (RECEIVED, PROCESSING or FAILED_RETRYABLE) of a consumer. */
export interface UnfinishedInbox {
  oldest(
    consumer: string,
  ): Promise<{ readonly idempotencyKey: string; readonly firstSeenAt: Date } | undefined>;
}

/** One operator action for the audit trail (`ops_audit`). */
export interface AuditEntry {
  readonly action: string;
  readonly outcome: 'STARTED' | 'DONE' | 'FAILED';
  readonly consumer?: string | undefined;
  readonly sourceQueue?: string | undefined;
  readonly targetQueue?: string | undefined;
  readonly sqsMessageId?: string | undefined;
  readonly newMessageId?: string | undefined;
  readonly idempotencyKey?: string | undefined;
  readonly messageType?: string | undefined;
  /** Metadata only (codes, counts, options); never a payload. */
  readonly detail?: Record<string, unknown>;
}

/** Where operator actions are recorded. */
export interface AuditTrail {
  /** Records an action and returns its id; `actor` defaults to `currentActor()`. */
  record(entry: AuditEntry, actor?: string): Promise<string>;
  /** Completes an action recorded with outcome `STARTED`. */
  finish(
    auditId: string,
    result: {
      outcome: 'DONE' | 'FAILED';
      newMessageId?: string | undefined;
      detail?: Record<string, unknown>;
    },
  ): Promise<void>;
}

/** An error as the operator reads it: its type, the message naming what to check, and the exit code. */
export interface DescribedError {
  readonly type: string;
  readonly message: string;
  readonly exitCode: number;
}

/** One period of the inbox side of `queue trend`. */
export interface InboxTrendPeriod {
  readonly start: Date;
  /** Entries first seen in the period (the first delivery the worker took). */
  readonly arrivals: number;
  /** Entries completed in the period. */
  readonly completions: number;
  /** Entries whose latest failed attempt was in the period (the inbox keeps only the latest). */
  readonly failures: number;
  /** Median and p99 (nearest rank) in milliseconds of the period's completions, by {@link InboxTrend.latency}; null without. */
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
}

/** One message type over the whole window of `queue trend --by-type`. */
export interface InboxTypeTrend {
  readonly messageType: string;
  readonly arrivals: number;
  readonly completions: number;
  readonly failures: number;
  /** p99 in milliseconds of its completions, by {@link InboxTrend.latency}; null without. */
  readonly p99Ms: number | null;
}

/** What {@link OpsStore.inboxTrend} reads. */
export interface InboxTrend {
  /**
   * What the p50/p99 measure: `processing` (DynamoDB: the completing attempt's lease start `startedAt` to
   * `completedAt`) or `first-seen-to-completed` (PostgreSQL: `worker_inbox` keeps no start of the completing attempt,
   * its `started_at` is the completing transaction's `now()`, so the time is from the first sighting, retries included).
   */
  readonly latency: 'processing' | 'first-seen-to-completed';
  /** One entry per period of the window, oldest first. */
  readonly periods: readonly InboxTrendPeriod[];
  /** One entry per message type seen in the window, the most arrivals first. */
  readonly byType: readonly InboxTypeTrend[];
  /** DynamoDB: items the scan read, its bound, and whether it reached the end of the table (else the figures are partial). */
  readonly scan?: { readonly scanned: number; readonly bound: number; readonly complete: boolean };
}
