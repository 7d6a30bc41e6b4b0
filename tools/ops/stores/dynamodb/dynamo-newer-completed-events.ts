import { GetCommand, paginateScan } from '@aws-sdk/lib-dynamodb';
import { INBOX_PK_PREFIX, inboxKey, WORKER_SK_PREFIX } from '../../../../lambda/stores/dynamodb/item-keys.ts';
import { decodeMessage } from '../../decode-message.ts';
import type { NewerCompletedEvent, NewerCompletedEvents } from '../../newer-completed-events.ts';
import type { QuarantineEntry } from '../../render-quarantine-entry.ts';
import type { DynamoOpsTarget } from './dynamo-ops-table.ts';

/**
 * The aggregate type named when the aggregate comes from an inbox item without `aggregateType` (an item written
 * before the type was kept), so every type is matched.
 *
 * @internal
 */
export const ANY_AGGREGATE_TYPE = '(any type)';

/**
 * The DynamoDB store's {@link findNewerCompletedEvents}: the events of a quarantined message's aggregate that the same
 * consumer completed after the message was first seen (re-sending it then applies an older event after newer ones).
 *
 * The aggregate comes from the envelope of the stored body (type and id), else from the inbox item (type and id).
 * "First seen" is the earlier of the inbox item's `firstSeenAt` and the item's `firstQuarantinedAt`. An inbox item
 * written before `aggregateType` was kept matches on its id alone (a COMPLETED item of another aggregate type with
 * the same id counts too): that errs on the safe side (a release refuses, the operator checks and uses `--force`),
 * never the other way. The table has no index by aggregate: this scans it (consistent reads). Inbox
 * items expire by TTL (retention + 1 day), so events completed before that are no longer seen, as after an `inbox
 * purge` on PostgreSQL.
 *
 * @internal
 */
export async function findDynamoNewerCompletedEvents(
  dynamo: DynamoOpsTarget,
  entry: Pick<QuarantineEntry, 'consumer' | 'idempotencyKey' | 'body' | 'firstQuarantinedAt'>,
  options: { limit?: number } = {},
): Promise<NewerCompletedEvents> {
  const limit = options.limit ?? 5;
  const inbox = entry.idempotencyKey
    ? (
        await dynamo.doc.send(
          new GetCommand({
            TableName: dynamo.tableName,
            Key: inboxKey(entry.consumer, entry.idempotencyKey),
            ConsistentRead: true,
            ProjectionExpression: 'aggregateType, aggregateId, firstSeenAt',
          }),
        )
      ).Item
    : undefined;
  let since = entry.firstQuarantinedAt;
  if (typeof inbox?.firstSeenAt === 'string') {
    const firstSeenAt = new Date(inbox.firstSeenAt);
    if (firstSeenAt < since) since = firstSeenAt;
  }
  // Envelope metadata only; decodeMessage never returns the payload.
  const decoded = decodeMessage(entry.body);
  let aggregate: NewerCompletedEvents['aggregate'] = null;
  if (decoded.aggregateType && decoded.aggregateId) {
    aggregate = { type: decoded.aggregateType, id: decoded.aggregateId, source: 'envelope' };
  } else if (typeof inbox?.aggregateId === 'string' && inbox.aggregateId !== '') {
    const type = typeof inbox.aggregateType === 'string' ? inbox.aggregateType : ANY_AGGREGATE_TYPE;
    aggregate = { type, id: inbox.aggregateId, source: 'inbox' };
  }
  if (!aggregate) return { aggregate, since, count: 0, events: [] };
  const filters = [
    'SK = :sk',
    'begins_with(PK, :inbox)',
    'aggregateId = :id',
    '#status = :completed',
    'completedAt > :since',
  ];
  const values: Record<string, unknown> = {
    ':sk': `${WORKER_SK_PREFIX}${entry.consumer}`,
    ':inbox': INBOX_PK_PREFIX,
    ':id': aggregate.id,
    ':completed': 'COMPLETED',
    ':since': since.toISOString(),
  };
  if (aggregate.type !== ANY_AGGREGATE_TYPE) {
    // Items without the type (written before it was kept) still count: on the safe side.
    filters.push('(attribute_not_exists(aggregateType) OR aggregateType = :type)');
    values[':type'] = aggregate.type;
  }
  if (entry.idempotencyKey) {
    filters.push('PK <> :own');
    values[':own'] = `${INBOX_PK_PREFIX}${entry.idempotencyKey}`;
  }
  const found: NewerCompletedEvent[] = [];
  const pages = paginateScan(
    { client: dynamo.doc },
    {
      TableName: dynamo.tableName,
      ConsistentRead: true,
      FilterExpression: filters.join(' AND '),
      ProjectionExpression: 'PK, messageType, completedAt',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: values,
    },
  );
  for await (const page of pages) {
    for (const item of page.Items ?? []) {
      found.push({
        messageType: String(item.messageType),
        idempotencyKey: String(item.PK).slice(INBOX_PK_PREFIX.length),
        completedAt: new Date(String(item.completedAt)),
      });
    }
  }
  found.sort(
    (a, b) =>
      a.completedAt.getTime() - b.completedAt.getTime() || a.idempotencyKey.localeCompare(b.idempotencyKey),
  );
  return { aggregate, since, count: found.length, events: found.slice(0, limit) };
}
