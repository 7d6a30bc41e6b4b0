import { TerminalError } from '../../errors.ts';
import type { EnqueueOutboxOptions } from '../../outbox/enqueue-outbox.ts';
import { type OutboxStoreLimit, prepareOutboxEnvelope } from '../../outbox/prepare-outbox-envelope.ts';
import type { Envelope } from '../../worker/envelope.ts';
import type { DynamoTransactItem, DynamoWrite } from './dynamo-handler.ts';
import { outboxKey } from './item-keys.ts';

/**
 * Largest envelope an outbox item holds, in bytes of its JSON: a DynamoDB item holds 400 KB (names and values), and
 * the item's other attributes and the relay's marks need a few KiB beside the envelope. A larger envelope goes by
 * `payloadRef` (`offload`) or is refused, as one above the queue's limit is.
 */
export const DYNAMO_OUTBOX_MAX_ENVELOPE_BYTES = 380_000;

const ITEM_LIMIT: OutboxStoreLimit = {
  maxBytes: DYNAMO_OUTBOX_MAX_ENVELOPE_BYTES,
  describe: `an outbox item's limit of ${DYNAMO_OUTBOX_MAX_ENVELOPE_BYTES} bytes (a DynamoDB item holds 400 KB)`,
};

/** What {@link dynamoOutboxWrite} gives: the transaction entry, and what the event travels as. */
export interface DynamoOutboxWrite {
  /**
   * The entry for your own `TransactWriteItems`, beside the state change it announces. A failed condition on it
   * (`CancellationReasons[i].Code === 'ConditionalCheckFailed'` at its index) means the key names another event.
   */
  readonly item: DynamoTransactItem;
  /** The same entry for a worker's handler: put it in `writes` (its rule makes a conflict `OUTBOX_CONFLICT`). */
  readonly write: DynamoWrite;
  /** The event's id: its envelope's `messageId`. */
  readonly eventId: string;
  /** The X-Ray trace id (`1-…-…`) the message travels with: the one the worker logs and `inbox show` prints. */
  readonly traceId: string | undefined;
}

/**
 * The outbox item of an envelope, as a `TransactWriteItems` entry (pattern document §16): put it in the same
 * transaction as the state change, and the event exists if and only if the change committed. The stack's stream
 * relay publishes it to the queue from the table's stream within seconds (docs/outbox.md, "On DynamoDB").
 *
 * - The same checks as `enqueueOutbox`: `envelopeSchema`, depth, size (the queue's limit and an item's,
 *   {@link DYNAMO_OUTBOX_MAX_ENVELOPE_BYTES}), `offload` to S3 above `offloadAboveBytes`, the trace recorded.
 * - Unique by `idempotencyKey` (`OUTBOX#<key>` / `EVENT`): writing the same key again with the same messageType,
 *   schemaVersion and payload leaves the item as it is (an update of absent attributes only: no stream record, no
 *   second send), so a producer that retries its command is safe. The same key with different content fails the
 *   entry's condition and cancels the transaction; in a worker's `writes` that is terminal `OUTBOX_CONFLICT` (the
 *   record quarantined, nothing of it applied).
 *
 * @param table the worker's table (the one whose stream the relay reads).
 * @throws InvalidOutboxEnvelopeError when the envelope is invalid, too deep or too large.
 * @throws OutboxOffloadError when the payload could not be written to S3.
 * @throws OutboxUsageError when `maxMessageBytes` or `trace` is not valid.
 *
 * @example
 * ```ts
 * const { item } = await dynamoOutboxWrite(table, envelope);
 * await doc.send(new TransactWriteCommand({ TransactItems: [{ Put: { TableName: table, Item: order } }, item] }));
 * ```
 */
export async function dynamoOutboxWrite(
  table: string,
  envelope: Envelope,
  options: EnqueueOutboxOptions = {},
): Promise<DynamoOutboxWrite> {
  const prepared = await prepareOutboxEnvelope(envelope, options, ITEM_LIMIT);
  const valid = prepared.envelope;
  const fields: Record<string, string | number> = {
    status: 'PENDING',
    messageId: valid.messageId,
    idempotencyKey: valid.idempotencyKey,
    messageType: valid.messageType,
    schemaVersion: valid.schemaVersion,
    aggregateType: valid.aggregateType,
    aggregateId: valid.aggregateId,
    requestHash: prepared.requestHash,
    envelope: JSON.stringify(valid),
    traceHeader: prepared.traceHeader,
    createdAt: new Date().toISOString(),
  };
  const names = Object.keys(fields);
  const item: DynamoTransactItem = {
    Update: {
      TableName: table,
      Key: outboxKey(valid.idempotencyKey),
      // Attributes that are absent only: the same event again changes nothing (DynamoDB writes no stream record).
      UpdateExpression: `SET ${names.map((_, i) => `#a${i} = if_not_exists(#a${i}, :v${i})`).join(', ')}`,
      ConditionExpression: 'attribute_not_exists(PK) OR requestHash = :hash',
      ExpressionAttributeNames: Object.fromEntries(names.map((name, i) => [`#a${i}`, name])),
      ExpressionAttributeValues: {
        ...Object.fromEntries(names.map((name, i) => [`:v${i}`, fields[name]])),
        ':hash': prepared.requestHash,
      },
    },
  };
  const write: DynamoWrite = {
    ...item,
    onConditionFailed: (current) =>
      new TerminalError(
        'OUTBOX_CONFLICT',
        `idempotency key ${valid.idempotencyKey} is already in the outbox (event ${String(current?.messageId ?? 'unknown')}) with a different messageType, schemaVersion or payload; use a new key for a different event`,
      ),
  };
  return { item, write, eventId: String(fields.messageId), traceId: prepared.traceId };
}
