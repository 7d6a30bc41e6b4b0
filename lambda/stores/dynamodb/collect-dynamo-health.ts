import { type DynamoDBDocumentClient, paginateScan } from '@aws-sdk/lib-dynamodb';
import type { HealthFigures } from '../../health/collect-health.ts';
import { INBOX_PK_PREFIX, OUTBOX_PK_PREFIX, QUARANTINE_PK_PREFIX, WORKER_SK_PREFIX } from './item-keys.ts';

/** Options of {@link collectDynamoHealth}. */
export interface CollectDynamoHealthOptions {
  /** Inbox namespace whose inbox and quarantine items are counted (`WORKER_CONSUMER`). */
  readonly consumer: string;
  /** Items the check reads at most; a larger table is counted in part (`truncated`). @default 200000 */
  readonly maxItems?: number;
  /** Items per Scan page (`Limit`). @default DynamoDB's 1 MB pages */
  readonly pageSize?: number;
  /** The clock (epoch ms). @default Date.now */
  readonly now?: () => number;
}

/** What {@link collectDynamoHealth} read: the PostgreSQL health job's figures, and the store's own. */
export interface DynamoHealthFigures extends HealthFigures {
  /** PROCESSING items whose lease expired: a worker died (or lost the table) after the gate; taken over on redelivery. */
  readonly leasesExpired: number;
  /** Items the scan read (after its filter: the unfinished ones), and whether it stopped at `maxItems`. */
  readonly scanned: number;
  readonly truncated: boolean;
}

/**
 * The health figures of the DynamoDB store (the health job's, with the same metric names as PostgreSQL's): open
 * quarantine items and the oldest one's age, unfinished inbox items by status with the oldest PROCESSING and
 * FAILED_RETRYABLE ages, leases past their expiry, and PENDING outbox items with the oldest one's age. One eventually
 * consistent Scan (the figures are a minute's view) filtered on what is unfinished, projecting only the attributes it
 * counts; its cost is the table's size in read units (4 KB each, halved by eventual consistency) per run, so it stops
 * at `maxItems` and says so. DynamoDB has no locks, deadlocks or long transactions: those figures are 0.
 *
 * @internal
 */
export async function collectDynamoHealth(
  table: { readonly doc: DynamoDBDocumentClient; readonly tableName: string },
  options: CollectDynamoHealthOptions,
): Promise<DynamoHealthFigures> {
  const nowMs = (options.now ?? Date.now)();
  const maxItems = options.maxItems ?? 200_000;
  const sk = `${WORKER_SK_PREFIX}${options.consumer}`;
  const tally = newTally();
  let scanned = 0;
  let truncated = false;
  const pages = paginateScan(
    { client: table.doc, ...(options.pageSize ? { pageSize: options.pageSize } : {}) },
    {
      TableName: table.tableName,
      FilterExpression:
        '(begins_with(PK, :inbox) AND SK = :sk AND #status <> :completed) OR ' +
        '(begins_with(PK, :quarantine) AND SK = :sk AND attribute_not_exists(releasedAt)) OR ' +
        '(begins_with(PK, :outbox) AND #status = :pending)',
      ProjectionExpression:
        'PK, #status, startedAt, firstSeenAt, leaseExpiresAt, firstQuarantinedAt, createdAt',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':inbox': INBOX_PK_PREFIX,
        ':quarantine': QUARANTINE_PK_PREFIX,
        ':outbox': OUTBOX_PK_PREFIX,
        ':sk': sk,
        ':completed': 'COMPLETED',
        ':pending': 'PENDING',
      },
    },
  );
  for await (const page of pages) {
    for (const item of page.Items ?? []) count(tally, item, nowMs);
    scanned += page.ScannedCount ?? 0;
    if (scanned >= maxItems && page.LastEvaluatedKey) {
      truncated = true;
      break;
    }
  }
  return figuresOf(tally, options.consumer, nowMs, { scanned, truncated });
}

interface Tally {
  quarantineOpen: number;
  oldestQuarantine: number | undefined;
  byStatus: { RECEIVED: number; PROCESSING: number; FAILED_RETRYABLE: number; FAILED_TERMINAL: number };
  oldestProcessing: number | undefined;
  oldestRetryable: number | undefined;
  leasesExpired: number;
  outboxPending: number;
  oldestPending: number | undefined;
}

const newTally = (): Tally => ({
  quarantineOpen: 0,
  oldestQuarantine: undefined,
  byStatus: { RECEIVED: 0, PROCESSING: 0, FAILED_RETRYABLE: 0, FAILED_TERMINAL: 0 },
  oldestProcessing: undefined,
  oldestRetryable: undefined,
  leasesExpired: 0,
  outboxPending: 0,
  oldestPending: undefined,
});

/** The earlier of two instants (epoch ms); an unparsable time counts as none. */
const earliest = (current: number | undefined, iso: unknown): number | undefined => {
  const at = typeof iso === 'string' ? Date.parse(iso) : Number.NaN;
  if (Number.isNaN(at)) return current;
  return current === undefined ? at : Math.min(current, at);
};

/** Adds one unfinished item to the tally. */
function count(tally: Tally, item: Record<string, unknown>, nowMs: number): void {
  const pk = String(item.PK);
  if (pk.startsWith(QUARANTINE_PK_PREFIX)) {
    tally.quarantineOpen += 1;
    tally.oldestQuarantine = earliest(tally.oldestQuarantine, item.firstQuarantinedAt);
  } else if (pk.startsWith(OUTBOX_PK_PREFIX)) {
    tally.outboxPending += 1;
    tally.oldestPending = earliest(tally.oldestPending, item.createdAt);
  } else if (item.status === 'PROCESSING') {
    tally.byStatus.PROCESSING += 1;
    tally.oldestProcessing = earliest(tally.oldestProcessing, item.startedAt);
    if (Number(item.leaseExpiresAt) <= nowMs) tally.leasesExpired += 1;
  } else if (item.status === 'FAILED_RETRYABLE') {
    tally.byStatus.FAILED_RETRYABLE += 1;
    tally.oldestRetryable = earliest(tally.oldestRetryable, item.firstSeenAt);
  } else if (item.status === 'FAILED_TERMINAL') {
    tally.byStatus.FAILED_TERMINAL += 1;
  }
}

/** The tally as the health job's figures. */
function figuresOf(
  tally: Tally,
  consumer: string,
  nowMs: number,
  scan: { scanned: number; truncated: boolean },
): DynamoHealthFigures {
  const age = (at: number | undefined) => (at === undefined ? null : Math.max(0, nowMs - at));
  const processingAge = age(tally.oldestProcessing);
  return {
    consumer,
    at: new Date(nowMs).toISOString(),
    quarantine: { open: tally.quarantineOpen, oldestOpenAgeMs: age(tally.oldestQuarantine) },
    inbox: {
      byStatus: { ...tally.byStatus },
      oldestProcessingAgeMs: processingAge,
      oldestRetryableAgeMs: age(tally.oldestRetryable),
      // No transaction holds a claim on DynamoDB: the oldest PROCESSING item is the oldest message in flight.
      oldestInFlightAgeMs: processingAge,
    },
    outbox: { pending: tally.outboxPending, oldestPendingAgeMs: age(tally.oldestPending) },
    locks: { waiting: 0, oldestWaitMs: null },
    deadlocks: 0,
    longTransactions: { count: 0, oldestAgeMs: null },
    leasesExpired: tally.leasesExpired,
    ...scan,
  };
}
