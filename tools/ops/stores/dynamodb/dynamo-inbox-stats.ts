import { paginateScan } from '@aws-sdk/lib-dynamodb';
import {
  INBOX_PK_PREFIX,
  QUARANTINE_PK_PREFIX,
  WORKER_SK_PREFIX,
} from '../../../../lambda/stores/dynamodb/item-keys.ts';
import type { Clock } from '../../clock.ts';
import type { OpsOutput } from '../../output.ts';
import { emit } from '../../output.ts';
import { type InboxStatsResult, renderInboxStats } from '../../render-inbox-stats.ts';
import { dynamoDeliveryTally } from './dynamo-delivery-tally.ts';
import type { DynamoOpsTarget } from './dynamo-ops-table.ts';

const STATUSES = ['PROCESSING', 'COMPLETED', 'FAILED_RETRYABLE', 'FAILED_TERMINAL'] as const;

/**
 * `inbox stats` on the DynamoDB store: the same report as on PostgreSQL (counts by status and failure code, the oldest
 * FAILED_RETRYABLE item, completions in the last hour, open quarantine items, duplicates told apart and deliveries
 * per key: `dynamo-delivery-tally.ts`) for one consumer. It scans the table
 * (consistent reads, only the items of the consumer kept): its cost grows with the table.
 */
export async function dynamoInboxStats(
  deps: { dynamo: DynamoOpsTarget; out: OpsOutput; clock: Clock },
  options: { consumer: string },
): Promise<InboxStatsResult> {
  const { dynamo, out, clock } = deps;
  const { consumer } = options;
  const now = clock.now();
  const hourAgo = now.getTime() - 3_600_000;
  const byStatus: Record<string, number> = Object.fromEntries(STATUSES.map((status) => [status, 0]));
  const failures = new Map<string, { status: string; failureCode: string | null; count: number }>();
  let oldest: InboxStatsResult['oldestRetryable'] = null;
  let completedLastHour = 0;
  let openQuarantine = 0;
  const tally = dynamoDeliveryTally({ fromMs: hourAgo, toMs: now.getTime() });
  const pages = paginateScan(
    { client: dynamo.doc },
    {
      TableName: dynamo.tableName,
      ConsistentRead: true,
      FilterExpression: 'SK = :sk',
      ExpressionAttributeValues: { ':sk': `${WORKER_SK_PREFIX}${consumer}` },
    },
  );
  for await (const page of pages) {
    for (const item of page.Items ?? []) {
      const pk = String(item.PK);
      if (pk.startsWith(QUARANTINE_PK_PREFIX)) {
        if (item.releasedAt === undefined) openQuarantine += 1;
        continue;
      }
      if (!pk.startsWith(INBOX_PK_PREFIX)) continue; // an operator's audit item (quarantine release)
      const status = String(item.status);
      byStatus[status] = (byStatus[status] ?? 0) + 1;
      tally.add(item);
      if (status === 'COMPLETED') {
        const completedAt = Date.parse(String(item.completedAt));
        if (completedAt > hourAgo && completedAt <= now.getTime()) completedLastHour += 1;
        continue;
      }
      const failureCode = typeof item.failureCode === 'string' ? item.failureCode : null;
      const group = `${status}\u0000${failureCode ?? ''}`;
      const entry = failures.get(group) ?? { status, failureCode, count: 0 };
      entry.count += 1;
      failures.set(group, entry);
      if (status === 'FAILED_RETRYABLE') {
        const firstSeenAt = new Date(String(item.firstSeenAt ?? item.startedAt));
        if (!oldest || firstSeenAt < oldest.firstSeenAt) {
          oldest = {
            idempotencyKey: pk.slice('IDEMP#'.length),
            messageType: String(item.messageType),
            failureCode,
            attempts: Number(item.attempts),
            firstSeenAt,
            ageSeconds: Math.max(0, Math.round((now.getTime() - firstSeenAt.getTime()) / 1000)),
          };
        }
      }
    }
  }
  const result: InboxStatsResult = {
    consumer,
    at: now.toISOString(),
    byStatus,
    failures: [...failures.values()].sort(
      (a, b) =>
        b.count - a.count ||
        a.status.localeCompare(b.status) ||
        (a.failureCode ?? '').localeCompare(b.failureCode ?? ''),
    ),
    oldestRetryable: oldest,
    completedLastHour,
    openQuarantine,
    duplicates: tally.duplicates(),
    deliveriesLastHour: tally.deliveries(),
  };
  emit(out, result, () => renderInboxStats(result));
  return result;
}
