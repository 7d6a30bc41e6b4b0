import { paginateScan } from '@aws-sdk/lib-dynamodb';
import { INBOX_PK_PREFIX, WORKER_SK_PREFIX } from '../../../../lambda/stores/dynamodb/item-keys.ts';
import { percentile } from '../../../bench/statistics.ts';
import type { InboxTrend, InboxTypeTrend } from '../../ops-store.ts';
import { periodIndex, type TrendWindow } from '../../trend-window.ts';
import type { DynamoOpsTarget } from './dynamo-ops-table.ts';

/**
 * Most items the scan of `queue trend` reads (DynamoDB's `ScannedCount`, every item of the table, not only the
 * window's): 100,000 items, about 12,500 read units for items of 1 KB (an eventually consistent Scan costs half a
 * unit per 4 KB read). Beyond it the figures are partial, and the command says so.
 */
export const TREND_SCAN_ITEM_BOUND = 100_000;

/** The attributes of an inbox item the trend reads (ISO times). */
interface TrendItem {
  readonly messageType?: string;
  readonly status?: string;
  readonly firstSeenAt?: string;
  readonly startedAt?: string;
  readonly completedAt?: string;
  readonly failedAt?: string;
}

interface Tally {
  arrivals: number;
  completions: number;
  failures: number;
  readonly times: number[];
}

const tally = (): Tally => ({ arrivals: 0, completions: 0, failures: 0, times: [] });
const at = (iso: string | undefined) => (iso === undefined ? Number.NaN : Date.parse(iso));
const p = (times: readonly number[], rank: number) => (times.length === 0 ? null : percentile(times, rank));

/** Adds one inbox item to the tallies of its periods and of its message type. */
function place(window: TrendWindow, item: TrendItem, periods: Tally[], types: Map<string, Tally>): void {
  const type = types.get(item.messageType ?? '?') ?? tally();
  types.set(item.messageType ?? '?', type);
  const arrival = periodIndex(window, at(item.firstSeenAt ?? item.startedAt));
  if (arrival >= 0) {
    (periods[arrival] as Tally).arrivals += 1;
    type.arrivals += 1;
  }
  const completed = periodIndex(window, at(item.completedAt));
  if (item.status === 'COMPLETED' && completed >= 0) {
    const ms = Math.max(0, at(item.completedAt) - at(item.startedAt));
    (periods[completed] as Tally).completions += 1;
    type.completions += 1;
    if (Number.isFinite(ms)) {
      (periods[completed] as Tally).times.push(ms);
      type.times.push(ms);
    }
  }
  const failed = periodIndex(window, at(item.failedAt));
  if (failed >= 0) {
    (periods[failed] as Tally).failures += 1;
    type.failures += 1;
  }
}

/**
 * `queue trend` on the DynamoDB store: the consumer's inbox items of the window, per period and per message type:
 * arrivals by `firstSeenAt`, completions by `completedAt`, failures by `failedAt` (the latest failed attempt, kept
 * after a completion), and the processing time of the completing attempt (`startedAt`, its lease start, to
 * `completedAt`; both the worker's clock) as p50/p99 (nearest rank). The table has no index by time: a Scan of the
 * whole table (the window and the consumer filtered server-side), stopped at {@link TREND_SCAN_ITEM_BOUND} items read;
 * `scan.complete` is false when it stopped before the end, and the figures are then partial.
 */
export async function dynamoInboxTrend(
  dynamo: DynamoOpsTarget,
  options: { consumer: string; window: TrendWindow; bound?: number },
): Promise<InboxTrend> {
  const { window } = options;
  const bound = options.bound ?? TREND_SCAN_ITEM_BOUND;
  const since = window.start.toISOString();
  const periods = window.periods.map(() => tally());
  const types = new Map<string, Tally>();
  let scanned = 0;
  let complete = true;
  const pages = paginateScan(
    { client: dynamo.doc, pageSize: Math.min(bound, 1000) },
    {
      TableName: dynamo.tableName,
      FilterExpression:
        'SK = :sk AND begins_with(PK, :inbox) AND (firstSeenAt >= :since OR completedAt >= :since OR failedAt >= :since)',
      ProjectionExpression: 'messageType, #status, firstSeenAt, startedAt, completedAt, failedAt',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':sk': `${WORKER_SK_PREFIX}${options.consumer}`,
        ':inbox': INBOX_PK_PREFIX,
        ':since': since,
      },
    },
  );
  for await (const page of pages) {
    scanned += page.ScannedCount ?? 0;
    for (const item of (page.Items ?? []) as TrendItem[]) place(window, item, periods, types);
    if (scanned >= bound && page.LastEvaluatedKey) {
      complete = false;
      break;
    }
  }
  const byType: InboxTypeTrend[] = [...types.entries()]
    .map(([messageType, t]) => ({
      messageType,
      arrivals: t.arrivals,
      completions: t.completions,
      failures: t.failures,
      p99Ms: p(t.times, 99),
    }))
    .filter((t) => t.arrivals + t.completions + t.failures > 0)
    .sort((a, b) => b.arrivals - a.arrivals || a.messageType.localeCompare(b.messageType));
  return {
    latency: 'processing',
    periods: periods.map((t, index) => ({
      start: window.periods[index] as Date,
      arrivals: t.arrivals,
      completions: t.completions,
      failures: t.failures,
      p50Ms: p(t.times, 50),
      p99Ms: p(t.times, 99),
    })),
    byType,
    scan: { scanned, bound, complete },
  };
}
