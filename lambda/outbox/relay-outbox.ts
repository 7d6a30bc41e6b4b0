import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import {
  SendMessageBatchCommand,
  type SendMessageBatchCommandOutput,
  type SendMessageBatchRequestEntry,
} from '@aws-sdk/client-sqs';
import type postgres from 'postgres';
import { METRIC_NAMES } from '../constants.ts';
import {
  formatTraceparent,
  parseXRayTraceHeader,
  TRACEPARENT_ATTRIBUTE,
  TRACEPARENT_ATTRIBUTE_BYTES,
  withParentId,
} from '../tracing/trace-context.ts';
import { OutboxUsageError } from './errors.ts';
import { fifoMessageIds } from './fifo-message-ids.ts';
import { planSendBatches, SQS_MAX_BATCH_BYTES } from './plan-send-batches.ts';

/**
 * The one SQS call the relay makes. A real `SQSClient` fits; tests pass one that fails on purpose.
 *
 * @internal
 */
export interface OutboxSqsSender {
  send(command: SendMessageBatchCommand): Promise<SendMessageBatchCommandOutput>;
}

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

interface ClaimedRow {
  event_id: string;
  idempotency_key: string;
  message_type: string;
  aggregate_id: string;
  envelope: Record<string, unknown> & { aggregateId: string; idempotencyKey: string };
  attempts: number;
  sequence: string;
  trace_header: string | null;
}

interface Outcome {
  readonly row: ClaimedRow;
  readonly messageId?: string;
  readonly error?: string;
}

const MAX_ERROR = 500;

const truncate = (text: string) => (text.length > MAX_ERROR ? `${text.slice(0, MAX_ERROR - 1)}…` : text);

function check(condition: boolean, message: string): void {
  if (!condition) throw new OutboxUsageError(message);
}

/**
 * The trace of a row as the message carries it: the X-Ray header as the `AWSTraceHeader` system attribute (what
 * X-Ray and Lambda read; system attributes do not count toward the message size) and the same context as a W3C
 * `traceparent` message attribute (what OpenTelemetry consumers read, and what survives where system attributes
 * do not: a local emulator, a redrive that copies message attributes). Rows written before traces were recorded
 * have none and are sent without.
 */
function traceAttributes(
  header: string | null,
): Pick<SendMessageBatchRequestEntry, 'MessageSystemAttributes' | 'MessageAttributes'> {
  const context = parseXRayTraceHeader(header);
  if (!header || !context) return {};
  return {
    MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: header } },
    MessageAttributes: {
      [TRACEPARENT_ATTRIBUTE]: { DataType: 'String', StringValue: formatTraceparent(withParentId(context)) },
    },
  };
}

/**
 * Publishes due outbox rows to SQS until there is no work, the deadline passes or a round fails completely
 * (SQS unavailable: the next scheduled run tries again).
 *
 * Each round:
 * 1. **Claim** (one short transaction): up to `batchSize` PENDING rows that are due (`next_attempt_at`), not
 *    leased by a live relay (`locked_until`), and have **no older PENDING row of the same aggregate** — leased
 *    or not, so two relays never send events of one aggregate out of order — oldest first, with
 *    `for update skip locked` so concurrent relays take disjoint rows without waiting. The rows get a lease
 *    (`locked_until`, `locked_by`) and `attempts + 1`, and the transaction commits before any send: no
 *    transaction is held open across a network call.
 * 2. **Send** with SendMessageBatch, ≤ 10 entries and ≤ `maxBatchBytes` per call. A round holds at most one
 *    row per aggregate, so its batches are independent and are sent concurrently. Each message carries the
 *    row's trace (`AWSTraceHeader` and a `traceparent` message attribute, see docs/tracing.md).
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
  const { sql, sqs, queueUrl, deadline, logger, metrics } = options;
  const clock = options.clock ?? (() => new Date());
  const batchSize = options.batchSize ?? 50;
  const leaseMs = options.leaseMs ?? 30_000;
  const relayId = options.relayId ?? `relay-${randomUUID().slice(0, 8)}@${hostname()}`.slice(0, 100);
  const baseMs = options.backoff?.baseMs ?? 1000;
  const maxMs = options.backoff?.maxMs ?? 300_000;
  const maxBatchBytes = options.maxBatchBytes ?? SQS_MAX_BATCH_BYTES;
  const random = options.random ?? Math.random;
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
  check(typeof queueUrl === 'string' && queueUrl.length > 0, 'queueUrl is required (set OUTBOX_QUEUE_URL)');
  const fifo = queueUrl.endsWith('.fifo');

  let published = 0;
  let failed = 0;
  let rounds = 0;
  let stoppedBy: RelayOutboxResult['stoppedBy'] = 'no-work';
  for (;;) {
    if (clock().getTime() >= deadline) {
      stoppedBy = 'deadline';
      break;
    }
    if (options.maxRounds !== undefined && rounds >= options.maxRounds) {
      stoppedBy = 'max-rounds';
      break;
    }
    const rows = await claim();
    if (rows.length === 0) break;
    rounds += 1;
    const outcomes = await send(rows);
    const sent = outcomes.filter((outcome) => outcome.messageId !== undefined);
    const failures = outcomes.filter((outcome) => outcome.messageId === undefined);
    await markPublished(sent);
    await markFailed(failures);
    published += sent.length;
    failed += failures.length;
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
    if (sent.length === 0) {
      stoppedBy = 'send-failure';
      break;
    }
  }

  const oldestPendingAgeMs = await oldestPendingAge();
  metrics?.addMetric(METRIC_NAMES.outboxPublished, MetricUnit.Count, published);
  metrics?.addMetric(METRIC_NAMES.outboxFailed, MetricUnit.Count, failed);
  metrics?.addMetric(METRIC_NAMES.outboxOldestPendingAgeMs, MetricUnit.Milliseconds, oldestPendingAgeMs);
  logger?.info('Outbox relay run finished', {
    relayId,
    published,
    failed,
    rounds,
    oldestPendingAgeMs,
    stoppedBy,
  });
  return { published, failed, rounds, oldestPendingAgeMs, stoppedBy };

  async function claim(): Promise<ClaimedRow[]> {
    const now = clock();
    const leaseUntil = new Date(now.getTime() + leaseMs);
    const rows = await sql<ClaimedRow[]>`
      with due as (
        select o.event_id
        from outbox_events o
        where o.status = 'PENDING'
          and o.next_attempt_at <= ${now}
          and (o.locked_until is null or o.locked_until <= ${now})
          and not exists (
            select 1
            from outbox_events older
            where older.aggregate_type = o.aggregate_type
              and older.aggregate_id = o.aggregate_id
              and older.status = 'PENDING'
              and older.sequence < o.sequence
          )
        order by o.sequence
        limit ${batchSize}
        for update of o skip locked
      )
      update outbox_events o
      set locked_until = ${leaseUntil}, locked_by = ${relayId}, attempts = o.attempts + 1
      from due
      where o.event_id = due.event_id
      returning o.event_id, o.idempotency_key, o.message_type, o.aggregate_id, o.envelope, o.attempts,
        o.sequence::text as sequence, o.trace_header
    `;
    return [...rows].sort((a, b) => (BigInt(a.sequence) < BigInt(b.sequence) ? -1 : 1));
  }

  async function send(rows: ClaimedRow[]): Promise<Outcome[]> {
    const entries = rows.map((row, index) => {
      const entry: SendMessageBatchRequestEntry = {
        Id: `m${index}`,
        MessageBody: JSON.stringify(row.envelope),
        ...(fifo ? fifoMessageIds(row.envelope) : {}),
        ...traceAttributes(row.trace_header),
      };
      return { row, entry };
    });
    const batches = planSendBatches(
      entries,
      ({ entry }) =>
        Buffer.byteLength(entry.MessageBody ?? '', 'utf8') +
        (entry.MessageAttributes ? TRACEPARENT_ATTRIBUTE_BYTES : 0),
      {
        maxBytes: maxBatchBytes,
      },
    );
    const results = await Promise.all(batches.map((batch) => sendBatch(batch)));
    return results.flat();
  }

  async function sendBatch(
    batch: { row: ClaimedRow; entry: SendMessageBatchRequestEntry }[],
  ): Promise<Outcome[]> {
    let output: SendMessageBatchCommandOutput;
    try {
      output = await sqs.send(
        new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: batch.map((b) => b.entry) }),
      );
    } catch (error) {
      const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      return batch.map(({ row }) => ({ row, error: truncate(`SendMessageBatch failed: ${text}`) }));
    }
    const ok = new Map((output.Successful ?? []).map((s) => [s.Id, s.MessageId]));
    const bad = new Map(
      (output.Failed ?? []).map((f) => [f.Id, `${f.Code ?? 'Failed'}: ${f.Message ?? ''}`]),
    );
    return batch.map(({ row, entry }) => {
      const messageId = ok.get(entry.Id);
      if (messageId) return { row, messageId };
      return {
        row,
        error: truncate(bad.get(entry.Id) ?? 'SendMessageBatch returned no result for this entry'),
      };
    });
  }

  async function markPublished(sent: Outcome[]): Promise<void> {
    if (sent.length === 0) return;
    const now = clock();
    const ids = sql.array(sent.map((s) => s.row.event_id));
    // No locked_by check: the message was sent, so PUBLISHED is true even if the lease ran out meanwhile.
    // The WHERE clause finds the rows by primary key whatever the statistics say: `event_id = any(ids)` is an
    // index condition, and `status <> 'PUBLISHED'` (= PENDING, by the check constraint) does not match the
    // partial pending index. With `status = 'PENDING'` and statistics that lag behind a backlog, PostgreSQL
    // walked that index over every pending row once per batch (measured: 40 ms per batch at 20,000 pending rows,
    // growing with the backlog; 0.3 ms this way) — the relay slowing down exactly when it is behind.
    await sql`
      update outbox_events o
      set status = 'PUBLISHED', sqs_message_id = v.message_id, published_at = ${now},
        locked_until = null, locked_by = null, last_error = null
      from unnest(${ids}::text[], ${sql.array(sent.map((s) => s.messageId as string))}::text[]) as v(event_id, message_id)
      where o.event_id = any(${ids}::text[]) and o.event_id = v.event_id and o.status <> 'PUBLISHED'
    `;
  }

  async function markFailed(failures: Outcome[]): Promise<void> {
    if (failures.length === 0) return;
    const now = clock().getTime();
    const retryAt = failures.map(({ row }) => {
      const cap = Math.min(maxMs, baseMs * 2 ** Math.min(30, Math.max(0, row.attempts - 1)));
      return new Date(now + cap / 2 + random() * (cap / 2)).toISOString();
    });
    const ids = sql.array(failures.map((f) => f.row.event_id));
    // Only rows still leased by this relay: another relay that took over an expired lease owns the row now.
    // Rows found by primary key, as in markPublished.
    await sql`
      update outbox_events o
      set next_attempt_at = v.retry_at, last_error = v.error, locked_until = null, locked_by = null
      from unnest(
        ${ids}::text[],
        ${sql.array(retryAt)}::timestamptz[],
        ${sql.array(failures.map((f) => f.error as string))}::text[]
      ) as v(event_id, retry_at, error)
      where o.event_id = any(${ids}::text[]) and o.event_id = v.event_id and o.status <> 'PUBLISHED'
        and o.locked_by = ${relayId}
    `;
  }

  async function oldestPendingAge(): Promise<number> {
    // The lowest sequence is the oldest row (the partial index makes this one index probe).
    const [oldest] = await sql<{ created_at: Date }[]>`
      select created_at from outbox_events where status = 'PENDING' order by sequence limit 1
    `;
    return oldest ? Math.max(0, clock().getTime() - oldest.created_at.getTime()) : 0;
  }
}
