import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { METRIC_NAMES } from '../../constants.ts';
import { SQS_MAX_BATCH_BYTES } from '../../outbox/plan-send-batches.ts';
import { type OutboxSqsSender, type SendOutcome, sendOutboxRows } from '../../outbox/send-outbox-rows.ts';
import { documentClient } from './document-client.ts';
import type { DynamoStore } from './dynamo-store.ts';
import { inboxExpiry } from './inbox-ttl.ts';
import { OUTBOX_PK_PREFIX, OUTBOX_SK, outboxKey } from './item-keys.ts';

/**
 * A DynamoDB Streams record as Lambda delivers it (`DynamoDBRecord` of `aws-lambda`), the parts the relay reads.
 *
 * @internal
 */
export interface OutboxStreamRecord {
  readonly eventName?: string;
  readonly dynamodb?: {
    readonly Keys?: Record<string, unknown>;
    readonly NewImage?: Record<string, unknown>;
    readonly SequenceNumber?: string;
  };
}

/** What the relay did with a batch of stream records; `batchItemFailures` is Lambda's partial batch response. */
export interface DynamoOutboxRelayResult {
  /** The records to retry, by sequence number: Lambda resumes the shard from the lowest one. */
  readonly batchItemFailures: { itemIdentifier: string }[];
  /** Outbox items sent to the queue and marked PUBLISHED by this call. */
  readonly published: number;
  /** Outbox items found PUBLISHED already (a retried batch): not sent again. */
  readonly alreadyPublished: number;
  /** Outbox items whose send or mark failed: retried by the event source mapping. */
  readonly failed: number;
  /** Records that are no outbox item's INSERT (the mapping's filter lets none through): ignored. */
  readonly ignored: number;
  /** Outbox items the relay cannot read (not written by `dynamoOutboxWrite`): logged and skipped. */
  readonly unreadable: number;
}

/** What {@link relayDynamoOutbox} works with. */
export interface DynamoOutboxRelayOptions {
  readonly store: DynamoStore;
  readonly sqs: OutboxSqsSender;
  /** The queue the events go to (the worker's). */
  readonly queueUrl: string;
  /** A standard queue's messages get MessageGroupId = aggregateId (SQS fair queues). @default false */
  readonly fairQueueGroups?: boolean;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** SendMessageBatch bytes per call. @default 262144 */
  readonly maxBatchBytes?: number;
  /** The clock (epoch ms). @default Date.now */
  readonly now?: () => number;
}

/** An outbox item read from its INSERT record, in stream order. */
interface StreamedEvent {
  readonly sequenceNumber: string;
  readonly idempotencyKey: string;
  readonly aggregate: string;
  readonly envelope: Record<string, unknown> & { aggregateId: string; idempotencyKey: string };
  readonly trace_header: string | null;
}

/**
 * The outbox relay of the DynamoDB store (pattern document §16), driven by the table's stream: the event source
 * mapping gives it the INSERT records of outbox items (`OUTBOX#…`, filtered by the mapping), in shard order.
 *
 * 1. Reads each record's new image; an item it cannot read is logged by key and skipped (a retry cannot fix it).
 * 2. Reads the items back (consistent BatchGetItem) and leaves out those PUBLISHED already: a retried batch sends
 *    only what was not sent.
 * 3. Sends the rest with SendMessageBatch (≤ 10 entries, ≤ 256 KiB per call; `AWSTraceHeader` and `traceparent`; a
 *    FIFO queue's group and deduplication ids), one event per aggregate per round so that an aggregate's events go
 *    in the order they were written.
 * 4. Marks each sent item PUBLISHED (`status = PENDING` condition; `sqsMessageId`, `publishedAt`, `ttl`).
 *    An aggregate whose event failed sends none of its later events in this call.
 *
 * A failed send or mark is returned in `batchItemFailures`: the mapping retries from it (and a send that succeeded
 * but could not be marked is sent again — the worker's inbox acknowledges the copy as a duplicate). Emits
 * `OutboxPublished` and `OutboxFailed`, as the PostgreSQL relay does; logs keys, never payloads.
 *
 * @internal
 */
export async function relayDynamoOutbox(
  records: readonly OutboxStreamRecord[],
  options: DynamoOutboxRelayOptions,
): Promise<DynamoOutboxRelayResult> {
  const { events, ignored, unreadable } = readStreamedEvents(records, options.logger);
  const pending = await unpublished(options.store, events);
  const failed: StreamedEvent[] = [];
  // An aggregate whose event failed sends none of its later ones in this call: they are retried after it, in order.
  const blocked = new Set<string>();
  for (const round of aggregateRounds(pending)) {
    const ready = round.filter((event) => !blocked.has(event.aggregate));
    failed.push(...round.filter((event) => blocked.has(event.aggregate)));
    const outcomes = await sendOutboxRows(options.sqs, ready, {
      queueUrl: options.queueUrl,
      maxBatchBytes: options.maxBatchBytes ?? SQS_MAX_BATCH_BYTES,
      fairQueueGroups: options.fairQueueGroups === true,
    });
    for (const event of await markPublished(options, outcomes)) {
      failed.push(event);
      blocked.add(event.aggregate);
    }
  }
  const published = pending.length - failed.length;
  options.metrics.addMetric(METRIC_NAMES.outboxPublished, MetricUnit.Count, published);
  options.metrics.addMetric(METRIC_NAMES.outboxFailed, MetricUnit.Count, failed.length + unreadable);
  const result = {
    batchItemFailures: failed.map((event) => ({ itemIdentifier: event.sequenceNumber })),
    published,
    alreadyPublished: events.length - pending.length,
    failed: failed.length,
    ignored,
    unreadable,
  };
  const { batchItemFailures: _f, ...counts } = result;
  options.logger.info('outbox_relay_batch', { records: records.length, ...counts });
  return result;
}

/** The outbox items of a batch's INSERT records, in stream order; the others counted. */
function readStreamedEvents(
  records: readonly OutboxStreamRecord[],
  logger: Logger,
): { events: StreamedEvent[]; ignored: number; unreadable: number } {
  const events: StreamedEvent[] = [];
  let ignored = 0;
  let unreadable = 0;
  for (const record of records) {
    const image = record.dynamodb?.NewImage;
    const sequenceNumber = record.dynamodb?.SequenceNumber;
    const item = image ? (unmarshall(image as never) as Record<string, unknown>) : undefined;
    if (
      record.eventName !== 'INSERT' ||
      !item ||
      !String(item.PK).startsWith(OUTBOX_PK_PREFIX) ||
      !sequenceNumber
    ) {
      ignored += 1;
      continue;
    }
    const envelope = parseEnvelope(item.envelope);
    if (item.SK !== OUTBOX_SK || !envelope || item.status !== 'PENDING') {
      unreadable += 1;
      logger.error('outbox_item_unreadable', {
        pk: String(item.PK).slice(0, 300),
        detail:
          'the item has no envelope the relay can send (not written by dynamoOutboxWrite); it is skipped: write the event again with dynamoOutboxWrite under a new key',
      });
      continue;
    }
    events.push({
      sequenceNumber,
      idempotencyKey: envelope.idempotencyKey,
      aggregate: `${String(envelope.aggregateType)}\u0000${envelope.aggregateId}`,
      envelope,
      trace_header: typeof item.traceHeader === 'string' ? item.traceHeader : null,
    });
  }
  return { events, ignored, unreadable };
}

/** The envelope of an item (its JSON text), when it has the fields a send needs. */
function parseEnvelope(text: unknown): StreamedEvent['envelope'] | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    const value = JSON.parse(text) as Record<string, unknown>;
    return typeof value.idempotencyKey === 'string' && typeof value.aggregateId === 'string'
      ? (value as StreamedEvent['envelope'])
      : undefined;
  } catch {
    return undefined;
  }
}

/** The events whose items are still PENDING (read back consistently, 100 keys per call). */
async function unpublished(store: DynamoStore, events: readonly StreamedEvent[]): Promise<StreamedEvent[]> {
  const done = new Set<string>();
  const keys = [...new Set(events.map((event) => event.idempotencyKey))];
  for (let i = 0; i < keys.length; i += 100) {
    let request: Record<string, unknown>[] | undefined = keys.slice(i, i + 100).map(outboxKey) as never;
    // Unprocessed keys are asked again; whatever stays unanswered is treated as pending (sent: at least once).
    for (let round = 0; request && request.length > 0 && round < 3; round += 1) {
      const output = await documentClient(store).send(
        new BatchGetCommand({
          RequestItems: {
            [store.tableName]: {
              Keys: request,
              ConsistentRead: true,
              ProjectionExpression: 'idempotencyKey, #status',
              ExpressionAttributeNames: { '#status': 'status' },
            },
          },
        }),
      );
      for (const item of output.Responses?.[store.tableName] ?? []) {
        if (item.status !== 'PENDING') done.add(String(item.idempotencyKey));
      }
      request = output.UnprocessedKeys?.[store.tableName]?.Keys as Record<string, unknown>[] | undefined;
    }
  }
  return events.filter((event) => !done.has(event.idempotencyKey));
}

/** Splits events into rounds holding at most one event per aggregate, each aggregate's in stream order. */
function aggregateRounds(events: readonly StreamedEvent[]): StreamedEvent[][] {
  const rounds: StreamedEvent[][] = [];
  const seen = new Map<string, number>();
  for (const event of events) {
    const index = seen.get(event.aggregate) ?? 0;
    seen.set(event.aggregate, index + 1);
    const round = rounds[index] ?? [];
    round.push(event);
    rounds[index] = round;
  }
  return rounds;
}

/** Marks each sent event's item PUBLISHED; returns the events that failed (their send, or their mark). */
async function markPublished(
  options: DynamoOutboxRelayOptions,
  outcomes: readonly SendOutcome<StreamedEvent>[],
): Promise<StreamedEvent[]> {
  const { store, logger } = options;
  const nowMs = (options.now ?? Date.now)();
  const marks = outcomes.map(async ({ row, messageId, error }) => {
    if (!messageId) {
      logger.warn('outbox_send_failed', { idempotencyKey: row.idempotencyKey, error });
      return row;
    }
    try {
      await documentClient(store).send(
        new UpdateCommand({
          TableName: store.tableName,
          Key: outboxKey(row.idempotencyKey),
          UpdateExpression: 'SET #status = :published, publishedAt = :now, sqsMessageId = :id, #ttl = :ttl',
          ConditionExpression: '#status = :pending',
          ExpressionAttributeNames: { '#status': 'status', '#ttl': 'ttl' },
          ExpressionAttributeValues: {
            ':published': 'PUBLISHED',
            ':pending': 'PENDING',
            ':now': new Date(nowMs).toISOString(),
            ':id': messageId,
            ':ttl': inboxExpiry(nowMs, store.inboxTtlSeconds),
          },
        }),
      );
    } catch (markError) {
      // Marked by another run of the same record meanwhile: published either way.
      if (markError instanceof ConditionalCheckFailedException) return undefined;
      logger.warn('outbox_mark_failed', {
        idempotencyKey: row.idempotencyKey,
        error:
          markError instanceof Error ? `${markError.name}: ${markError.message}`.slice(0, 500) : 'unknown',
      });
      return row;
    }
    return undefined;
  });
  return (await Promise.all(marks)).filter((row): row is StreamedEvent => row !== undefined);
}
