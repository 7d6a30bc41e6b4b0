import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { INBOX_PK_PREFIX, WORKER_SK_PREFIX } from '../../../../lambda/stores/dynamodb/item-keys.ts';
import type { Clock } from '../../clock.ts';
import type { OpsOutput } from '../../output.ts';
import { emit } from '../../output.ts';
import {
  type HotEntry,
  type InboxHotResult,
  LOCK_WAIT_CODES,
  renderInboxHot,
} from '../../render-inbox-hot.ts';
import { dynamoItemSeenMs } from './dynamo-item-seen.ts';
import type { DynamoOpsTarget } from './dynamo-ops-table.ts';

/** Items one Scan page reads at most. */
const PAGE_ITEMS = 1000;

type KeyEntry = HotEntry & { idempotencyKey: string; status: string };

/**
 * `inbox hot` on the DynamoDB store: the same report as on PostgreSQL, from a Scan of the table that stops after
 * `scanLimit` items (evaluated, before the filter on the consumer: what the read capacity pays for), so its cost is
 * bounded; when it stops early the report says it is partial. A key's retries are its `attempts` beyond the first
 * plus its counted duplicates; in flight is a PROCESSING item whose lease has not expired.
 */
export async function dynamoInboxHot(
  deps: { dynamo: DynamoOpsTarget; out: OpsOutput; clock: Clock },
  options: { consumer: string; limit: number; sinceSeconds: number; scanLimit: number },
): Promise<InboxHotResult> {
  const { dynamo, out, clock } = deps;
  const now = clock.now().getTime();
  const from = now - options.sinceSeconds * 1000;
  const lockCodes: readonly string[] = LOCK_WAIT_CODES;
  const keys: KeyEntry[] = [];
  let scanned = 0;
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await dynamo.doc.send(
      new ScanCommand({
        TableName: dynamo.tableName,
        Limit: Math.min(PAGE_ITEMS, options.scanLimit - scanned),
        ExclusiveStartKey: startKey,
        FilterExpression: 'SK = :sk AND begins_with(PK, :inbox)',
        ExpressionAttributeValues: {
          ':sk': `${WORKER_SK_PREFIX}${options.consumer}`,
          ':inbox': INBOX_PK_PREFIX,
        },
      }),
    );
    scanned += page.ScannedCount ?? 0;
    startKey = page.LastEvaluatedKey;
    for (const item of page.Items ?? []) {
      const seen = dynamoItemSeenMs(item);
      if (!(seen > from && seen <= now)) continue;
      const count = (value: unknown) => (typeof value === 'number' ? value : 0);
      const status = String(item.status);
      keys.push({
        idempotencyKey: String(item.PK).slice(INBOX_PK_PREFIX.length),
        status,
        aggregateType: typeof item.aggregateType === 'string' ? item.aggregateType : null,
        aggregateId: String(item.aggregateId),
        keys: 1,
        retries:
          Math.max(count(item.attempts) - 1, 0) + count(item.redeliveryCount) + count(item.resendCount),
        inFlight: status === 'PROCESSING' && count(item.leaseExpiresAt) > now ? 1 : 0,
        lockWaits: lockCodes.includes(String(item.failureCode)) ? 1 : 0,
      });
    }
  } while (startKey && scanned < options.scanLimit);
  const result: InboxHotResult = {
    consumer: options.consumer,
    at: new Date(now).toISOString(),
    sinceSeconds: options.sinceSeconds,
    aggregates: hottest(byAggregate(keys), options.limit),
    keys: hottest(keys, options.limit),
    scan: { items: scanned, complete: startKey === undefined },
  };
  emit(out, result, () => renderInboxHot(result));
  return result;
}

/** The keys' figures summed per aggregate. */
function byAggregate(keys: readonly KeyEntry[]): HotEntry[] {
  const groups = new Map<string, HotEntry>();
  for (const k of keys) {
    const group = `${k.aggregateType ?? ''}\u0000${k.aggregateId}`;
    const sum = groups.get(group);
    groups.set(group, {
      aggregateType: k.aggregateType,
      aggregateId: k.aggregateId,
      keys: (sum?.keys ?? 0) + 1,
      retries: (sum?.retries ?? 0) + k.retries,
      inFlight: (sum?.inFlight ?? 0) + k.inFlight,
      lockWaits: (sum?.lockWaits ?? 0) + k.lockWaits,
    });
  }
  return [...groups.values()];
}

/** The entries with any trouble, most retries first (then in flight, then lock waits), at most `limit`. */
function hottest<T extends HotEntry>(entries: readonly T[], limit: number): T[] {
  return entries
    .filter((e) => e.retries > 0 || e.inFlight > 0 || e.lockWaits > 0)
    .sort((a, b) => b.retries - a.retries || b.inFlight - a.inFlight || b.lockWaits - a.lockWaits)
    .slice(0, limit);
}
