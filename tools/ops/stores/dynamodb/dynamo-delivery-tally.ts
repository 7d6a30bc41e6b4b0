import type { DeliveryCounts, DuplicateCounts } from '../../render-inbox-stats.ts';
import { dynamoItemSeenMs } from './dynamo-item-seen.ts';

/** What `inbox stats` reads of an inbox item for its duplicates and deliveries. */
type InboxItemCounts = Readonly<Record<string, unknown>>;

/**
 * The duplicates and the deliveries per key of `inbox stats` on DynamoDB, added up item by item as the scan reads
 * them: `redeliveryCount` and `resendCount` summed; a key's deliveries are its `attempts` (the deliveries that took
 * the lease) plus its counted duplicates, among the keys seen in the window (`dynamoItemSeenMs`).
 *
 * @internal
 */
export function dynamoDeliveryTally(window: { fromMs: number; toMs: number }): {
  add(item: InboxItemCounts): void;
  duplicates(): DuplicateCounts;
  deliveries(): DeliveryCounts;
} {
  let redeliveries = 0;
  let resends = 0;
  let keysRedelivered = 0;
  let keys = 0;
  let total = 0;
  let maxPerKey = 0;
  let keysSeenAgain = 0;
  const count = (value: unknown) => (typeof value === 'number' ? value : 0);
  return {
    add(item) {
      const redelivered = count(item.redeliveryCount);
      const resent = count(item.resendCount);
      redeliveries += redelivered;
      resends += resent;
      if (redelivered > 0) keysRedelivered += 1;
      const seen = dynamoItemSeenMs(item);
      if (!(seen > window.fromMs && seen <= window.toMs)) return;
      const delivered = count(item.attempts) + redelivered + resent;
      keys += 1;
      total += delivered;
      maxPerKey = Math.max(maxPerKey, delivered);
      if (delivered > 1) keysSeenAgain += 1;
    },
    duplicates: () => ({ redeliveries, resends, keysRedelivered }),
    deliveries: () => ({ keys, maxPerKey, avgPerKey: keys > 0 ? total / keys : 0, keysSeenAgain }),
  };
}
