import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type postgres from 'postgres';
import { METRIC_NAMES } from '../constants.ts';
import { OutboxUsageError } from './errors.ts';
import {
  type ClaimedRow,
  claimOutboxRows,
  markOutboxFailed,
  markOutboxPublished,
  oldestPendingAgeMs,
} from './outbox-sql.ts';
import { SQS_MAX_BATCH_BYTES } from './plan-send-batches.ts';
import { type OutboxSqsSender, sendOutboxRows } from './send-outbox-rows.ts';

export type { OutboxSqsSender } from './send-outbox-rows.ts';

/**
 * The Powertools Logger methods the relay uses. Attributes never contain payloads.
 *
 * @internal
 */
export type OutboxRelayLogger = Pick<Logger, 'info' | 'warn' | 'error'>;

/**
 * Options of {@link relayOutbox}.
 *
 * @internal
 */
export interface RelayOutboxOptions {
  /** The pool (not a transaction): each claim and each mark is its own short transaction. */
  readonly sql: postgres.Sql;
  /** SQS client used for SendMessageBatch. */
  readonly sqs: OutboxSqsSender;
  /** Target queue. A URL ending in `.fifo` gets MessageGroupId = aggregateId, MessageDeduplicationId = key. */
  readonly queueUrl: string;
  /** A standard queue's messages get MessageGroupId = aggregateId (SQS fair queues). @default false */
  readonly fairQueueGroups?: boolean;
  /**
   * Epoch milliseconds (by `clock`) after which no new round starts; the current round finishes. The Lambda
   * entry derives it from `context.getRemainingTimeInMillis()` minus a guard.
   */
  readonly deadline: number;
  /** Current time; leases, backoff and ages use it. @default () => new Date() */
  readonly clock?: () => Date;
  readonly logger?: OutboxRelayLogger;
  /** Receives OutboxPublished, OutboxFailed (Count) and OutboxOldestPendingAgeMs (Milliseconds). */
  readonly metrics?: Pick<Metrics, 'addMetric'>;
  /** Rows claimed per round, 1–500. @default 50 */
  readonly batchSize?: number;
  /** How long a claim keeps other relays off a row, ≥ 1000 ms; must exceed one round. @default 30000 */
  readonly leaseMs?: number;
  /** Names this relay in `locked_by` (≤ 100 characters). @default `relay-<random>@<hostname>` */
  readonly relayId?: string;
  /** Retry delay of a failed send: `base × 2^(attempts − 1)`, capped, with equal jitter. */
  readonly backoff?: { readonly baseMs?: number; readonly maxMs?: number };
  /** Byte limit of one SendMessageBatch call. @default 262144 */
  readonly maxBatchBytes?: number;
  /** Stop after this many rounds (a round = one claim). @default unlimited until `deadline` or no work */
  readonly maxRounds?: number;
  /** Source of numbers in [0, 1) for the jitter. @default Math.random */
  readonly random?: () => number;
}

/**
 * What one {@link relayOutbox} run did.
 *
 * @internal
 */
export interface RelayOutboxResult {
  /** Rows marked PUBLISHED. */
  readonly published: number;
  /** Send attempts that failed (rows scheduled for a retry). */
  readonly failed: number;
  /** Claims made. */
  readonly rounds: number;
  /** Age of the oldest PENDING row after the run, 0 when none. */
  readonly oldestPendingAgeMs: number;
  /** Why the run ended. */
  readonly stoppedBy: 'no-work' | 'deadline' | 'max-rounds' | 'send-failure';
}

/**
 * Publishes due outbox rows to SQS until there is no work, the deadline passes or a round fails completely
 * (SQS unavailable: the next scheduled run tries again).
 *
 * Each round:
 * 1. **Claim** (one short transaction, {@link claimOutboxRows}): due PENDING rows with **no older PENDING row of
 *    the same aggregate**, leased to this relay; the transaction commits before any send: no transaction is held
 *    open across a network call.
 * 2. **Send** ({@link sendOutboxRows}): SendMessageBatch calls, concurrently, each message with the row's trace.
 * 3. **Mark** sent rows PUBLISHED with the SQS message id; failed rows get `next_attempt_at` = now + backoff,
 *    `last_error` (the SQS code and message, never the payload) and their lease released.
 *
 * At-least-once: a crash between send and mark leaves the row PENDING; when its lease expires it is sent
 * again (the consumer's inbox makes that harmless, and a FIFO queue drops it within 5 minutes by
 * MessageDeduplicationId). An event whose head-of-aggregate row keeps failing blocks the later events of that
 * aggregate only, and shows up in OutboxOldestPendingAgeMs. No advisory locks, LISTEN or session state: it
 * runs behind RDS Proxy without pinning.
 *
 * Metrics are added to `metrics`; the caller publishes them (`publishStoredMetrics()`).
 *
 * @example
 * ```ts
 * const result = await relayOutbox({ sql, sqs, queueUrl, deadline: Date.now() + 50_000, logger, metrics });
 * metrics.publishStoredMetrics();
 * ```
 *
 * @internal
 */
export async function relayOutbox(options: RelayOutboxOptions): Promise<RelayOutboxResult> {
  const { sql, deadline, logger, metrics } = options;
  const settings = relaySettings(options);
  const { clock, relayId } = settings;
  const totals = { published: 0, failed: 0, rounds: 0 };
  let stoppedBy: RelayOutboxResult['stoppedBy'] = 'no-work';
  for (;;) {
    if (clock().getTime() >= deadline) {
      stoppedBy = 'deadline';
      break;
    }
    if (options.maxRounds !== undefined && totals.rounds >= options.maxRounds) {
      stoppedBy = 'max-rounds';
      break;
    }
    const now = clock();
    const rows = await claimOutboxRows(sql, {
      now,
      leaseUntil: new Date(now.getTime() + settings.leaseMs),
      relayId,
      batchSize: settings.batchSize,
    });
    if (rows.length === 0) break;
    totals.rounds += 1;
    const sent = await relayRound(options, settings, rows, totals);
    if (sent === 0) {
      stoppedBy = 'send-failure';
      break;
    }
  }
  const oldestPendingAge = await oldestPendingAgeMs(sql, clock());
  metrics?.addMetric(METRIC_NAMES.outboxPublished, MetricUnit.Count, totals.published);
  metrics?.addMetric(METRIC_NAMES.outboxFailed, MetricUnit.Count, totals.failed);
  metrics?.addMetric(METRIC_NAMES.outboxOldestPendingAgeMs, MetricUnit.Milliseconds, oldestPendingAge);
  logger?.info('Outbox relay run finished', {
    relayId,
    ...totals,
    oldestPendingAgeMs: oldestPendingAge,
    stoppedBy,
  });
  return { ...totals, oldestPendingAgeMs: oldestPendingAge, stoppedBy };
}

/** The relay's settings after defaults, checked. */
interface RelaySettings {
  readonly clock: () => Date;
  readonly batchSize: number;
  readonly leaseMs: number;
  readonly relayId: string;
  readonly baseMs: number;
  readonly maxMs: number;
  readonly maxBatchBytes: number;
  readonly random: () => number;
}

/** The options' defaults, each checked: a wrong one is an `OutboxUsageError` naming it. */
function relaySettings(options: RelayOutboxOptions): RelaySettings {
  const settings: RelaySettings = {
    clock: options.clock ?? (() => new Date()),
    batchSize: options.batchSize ?? 50,
    leaseMs: options.leaseMs ?? 30_000,
    relayId: options.relayId ?? `relay-${randomUUID().slice(0, 8)}@${hostname()}`.slice(0, 100),
    baseMs: options.backoff?.baseMs ?? 1000,
    maxMs: options.backoff?.maxMs ?? 300_000,
    maxBatchBytes: options.maxBatchBytes ?? SQS_MAX_BATCH_BYTES,
    random: options.random ?? Math.random,
  };
  const { batchSize, leaseMs, relayId, baseMs, maxMs } = settings;
  check(
    Number.isInteger(batchSize) && batchSize >= 1 && batchSize <= 500,
    `batchSize must be a whole number from 1 to 500 (given ${batchSize})`,
  );
  check(
    Number.isInteger(leaseMs) && leaseMs >= 1000,
    `leaseMs must be a whole number of milliseconds ≥ 1000 (given ${leaseMs})`,
  );
  check(
    relayId.length >= 1 && relayId.length <= 100,
    `relayId must be 1 to 100 characters (given ${relayId.length})`,
  );
  check(
    baseMs > 0 && maxMs >= baseMs,
    `backoff must have 0 < baseMs ≤ maxMs (given baseMs ${baseMs}, maxMs ${maxMs})`,
  );
  const { queueUrl } = options;
  check(typeof queueUrl === 'string' && queueUrl.length > 0, 'queueUrl is required (set OUTBOX_QUEUE_URL)');
  return settings;
}

/** One round after its claim: send, mark, count and log each failure; returns the rows sent. */
async function relayRound(
  options: RelayOutboxOptions,
  settings: RelaySettings,
  rows: ClaimedRow[],
  totals: { published: number; failed: number },
): Promise<number> {
  const { sql, logger } = options;
  const outcomes = await sendOutboxRows(options.sqs, rows, {
    queueUrl: options.queueUrl,
    maxBatchBytes: settings.maxBatchBytes,
    fairQueueGroups: options.fairQueueGroups === true,
  });
  const sent = outcomes.filter((outcome) => outcome.messageId !== undefined);
  const failures = outcomes.filter((outcome) => outcome.messageId === undefined);
  await markOutboxPublished(
    sql,
    sent.map((s) => ({ eventId: s.row.event_id, messageId: s.messageId as string })),
    settings.clock(),
  );
  const nowMs = settings.clock().getTime();
  await markOutboxFailed(
    sql,
    failures.map(({ row, error }) => ({
      eventId: row.event_id,
      retryAt: retryAt(settings, row.attempts, nowMs),
      error: error as string,
    })),
    settings.relayId,
  );
  totals.published += sent.length;
  totals.failed += failures.length;
  for (const { row, error } of failures) {
    logger?.warn('Outbox send failed; retrying later', {
      eventId: row.event_id,
      idempotencyKey: row.idempotency_key,
      messageType: row.message_type,
      aggregateId: row.aggregate_id,
      attempts: row.attempts,
      error,
    });
  }
  return sent.length;
}

/** The retry time of a failed send: `base × 2^(attempts − 1)`, capped, with equal jitter. */
function retryAt(settings: RelaySettings, attempts: number, nowMs: number): string {
  const cap = Math.min(settings.maxMs, settings.baseMs * 2 ** Math.min(30, Math.max(0, attempts - 1)));
  return new Date(nowMs + cap / 2 + settings.random() * (cap / 2)).toISOString();
}

function check(condition: boolean, message: string): void {
  if (!condition) throw new OutboxUsageError(message);
}
