import { paginateScan } from '@aws-sdk/lib-dynamodb';
import { QUARANTINE_PK_PREFIX, WORKER_SK_PREFIX } from '../../../../lambda/stores/dynamodb/item-keys.ts';
import { classifyFailures, NO_INBOX_ENTRY } from '../../classify-failures.ts';
import type { QuarantineListOptions } from '../../ops-store.ts';
import type { OpsOutput } from '../../output.ts';
import { emit } from '../../output.ts';
import {
  type QuarantineListEntry,
  type QuarantineListResult,
  renderQuarantineList,
} from '../../render-quarantine-list.ts';
import { dynamoDlqInbox } from './dynamo-dlq-inbox.ts';
import type { DynamoOpsTarget } from './dynamo-ops-table.ts';
import { toDynamoQuarantineEntry } from './dynamo-quarantine-entry.ts';

/** The attributes `quarantine list` reads: never `body`, nor the attributes that may carry payload values. */
const LISTED = [
  'PK',
  'SK',
  'bodyHash',
  'messageType',
  'idempotencyKey',
  'reasonCode',
  'occurrences',
  'firstQuarantinedAt',
  'lastQuarantinedAt',
  'releasedAt',
  'releasedMessageId',
  'workerVersion',
];

/**
 * `quarantine list` on the DynamoDB store: the quarantine items of a consumer, newest first (by last quarantined,
 * then id), without bodies; the same result and table as on PostgreSQL, the id being the body hash (`PK =
 * QUARANTINE#<bodyHash>`). By default only items not released yet; `includeReleased` lists all.
 *
 * The table has no index by consumer or time, so this scans it (consistent reads, filtered on the consumer's
 * quarantine items, body never read): its cost grows with the table, as `inbox stats`. The first-seen version of each
 * key is its inbox item's `firstVersion` (consistent BatchGetItem of the listed keys; with `group`, of every matching
 * entry's, which are all counted by reason code and first-seen version).
 */
export async function dynamoQuarantineList(
  deps: { dynamo: DynamoOpsTarget; out: OpsOutput },
  options: QuarantineListOptions,
): Promise<QuarantineListResult> {
  const { dynamo, out } = deps;
  const { filters, values } = scanFilter(options);
  const found: Omit<QuarantineListEntry, 'firstVersion'>[] = [];
  const pages = paginateScan(
    { client: dynamo.doc },
    {
      TableName: dynamo.tableName,
      ConsistentRead: true,
      FilterExpression: filters.join(' AND '),
      ProjectionExpression: LISTED.join(', '),
      ExpressionAttributeValues: values,
    },
  );
  for await (const page of pages) {
    for (const item of page.Items ?? []) {
      const e = toDynamoQuarantineEntry(item);
      found.push({
        quarantineId: e.quarantineId,
        messageType: e.messageType,
        idempotencyKey: e.idempotencyKey,
        reasonCode: e.reasonCode,
        occurrences: e.occurrences,
        firstQuarantinedAt: e.firstQuarantinedAt,
        lastQuarantinedAt: e.lastQuarantinedAt,
        releasedAt: e.releasedAt,
        releasedMessageId: e.releasedMessageId,
        workerVersion: typeof item.workerVersion === 'string' ? item.workerVersion : null,
      });
    }
  }
  const order = options.oldestFirst ? -1 : 1;
  found.sort(
    (a, b) =>
      order *
      (b.lastQuarantinedAt.getTime() - a.lastQuarantinedAt.getTime() ||
        b.quarantineId.localeCompare(a.quarantineId)),
  );
  const listed = found.slice(0, options.limit ?? 50);
  const keyed = (options.group ? found : listed).flatMap((e) => (e.idempotencyKey ? [e.idempotencyKey] : []));
  const inbox = await dynamoDlqInbox(dynamo).states(options.consumer, keyed);
  const firstVersion = (key: string | null) => (key ? (inbox.get(key)?.firstVersion ?? null) : null);
  const entries = listed.map((e) => ({ ...e, firstVersion: firstVersion(e.idempotencyKey) }));
  const byReason: Record<string, number> = {};
  for (const entry of entries) byReason[entry.reasonCode] = (byReason[entry.reasonCode] ?? 0) + 1;
  const classes = options.group
    ? classifyFailures(
        found.map((e) => ({
          code: e.reasonCode,
          keys: e.idempotencyKey ? [e.idempotencyKey] : [],
          inbox: e.idempotencyKey ? inbox.get(e.idempotencyKey) : undefined,
        })),
        NO_INBOX_ENTRY,
      )
    : undefined;
  const result: QuarantineListResult = {
    consumer: options.consumer,
    entries,
    byReason,
    ...(classes ? { classes } : {}),
  };
  emit(out, result, () => renderQuarantineList(result, options.includeReleased === true));
  return result;
}

/**
 * The scan's filter: the consumer's quarantine items, unreleased unless `includeReleased`, and the given reason code,
 * message type and `since` / `before` on `lastQuarantinedAt` (ISO strings of one format compare as times).
 */
function scanFilter(options: QuarantineListOptions): { filters: string[]; values: Record<string, unknown> } {
  const filters = ['begins_with(PK, :q)', 'SK = :sk'];
  const values: Record<string, unknown> = {
    ':q': QUARANTINE_PK_PREFIX,
    ':sk': `${WORKER_SK_PREFIX}${options.consumer}`,
  };
  if (!options.includeReleased) filters.push('attribute_not_exists(releasedAt)');
  const equal: Array<[string, string | undefined]> = [
    ['reasonCode', options.reasonCode],
    ['messageType', options.messageType],
  ];
  for (const [name, value] of equal) {
    if (!value) continue;
    filters.push(`${name} = :${name}`);
    values[`:${name}`] = value;
  }
  if (options.since) {
    filters.push('lastQuarantinedAt >= :since');
    values[':since'] = options.since.toISOString();
  }
  if (options.before) {
    filters.push('lastQuarantinedAt < :before');
    values[':before'] = options.before.toISOString();
  }
  return { filters, values };
}
