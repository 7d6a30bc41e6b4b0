import { table } from './output.ts';

/**
 * The failure codes `inbox hot` counts as lock waits: a lock not granted in time (`LOCK_TIMEOUT`, 55P03 outside the
 * claim), a deadlock, a copy that found its key held (`IN_PROGRESS_ELSEWHERE`, where written) and DynamoDB's
 * transaction conflict. A row keeps only its latest failure code: these are keys whose last failure was one.
 */
export const LOCK_WAIT_CODES = [
  'LOCK_TIMEOUT',
  'DEADLOCK_DETECTED',
  'IN_PROGRESS_ELSEWHERE',
  'TRANSACTION_CONFLICT',
] as const;

/** One aggregate's (or key's) share of the trouble. */
export interface HotEntry {
  readonly aggregateType: string | null;
  readonly aggregateId: string;
  /** The idempotency key (a key's entry), or the number of keys (an aggregate's entry). */
  readonly keys: number;
  /** Deliveries beyond each key's first (receive_count − 1 on PostgreSQL; attempts − 1 plus duplicates on DynamoDB). */
  readonly retries: number;
  /** Keys claimed right now as the store shows it (PROCESSING; a live lease on DynamoDB). */
  readonly inFlight: number;
  /** Keys whose last failure code is a lock wait ({@link LOCK_WAIT_CODES}). */
  readonly lockWaits: number;
}

/** What `inbox hot` reports, on either store. */
export interface InboxHotResult {
  readonly consumer: string;
  readonly at: string;
  /** Keys last seen in this many seconds before `at`. */
  readonly sinceSeconds: number;
  readonly aggregates: readonly HotEntry[];
  readonly keys: ReadonlyArray<HotEntry & { readonly idempotencyKey: string; readonly status: string }>;
  /** DynamoDB: the items the bounded Scan read, and whether it read the whole table. */
  readonly scan?: { readonly items: number; readonly complete: boolean };
}

/**
 * The text of `inbox hot` (shared by both stores).
 *
 * @internal
 */
export function renderInboxHot(result: InboxHotResult): string {
  const head = ['aggregate', 'retries', 'in flight', 'lock waits'];
  const name = (e: HotEntry) => `${e.aggregateType ?? '?'}/${e.aggregateId}`;
  return [
    `Hot aggregates of consumer ${result.consumer}, keys seen in the ${result.sinceSeconds} s before ${result.at}`,
    ...(result.scan && !result.scan.complete
      ? [`Partial: the Scan stopped at its bound after ${result.scan.items} items (raise --scan-limit).`]
      : result.scan
        ? [`Scanned the whole table: ${result.scan.items} items.`]
        : []),
    result.aggregates.length > 0
      ? table(
          [...head.slice(0, 1), 'keys', ...head.slice(1)],
          result.aggregates.map((e) => [name(e), e.keys, e.retries, e.inFlight, e.lockWaits]),
        )
      : 'No retries, claims in flight or lock waits.',
    result.keys.length > 0
      ? table(
          ['idempotency key', 'status', ...head],
          result.keys.map((k) => [k.idempotencyKey, k.status, name(k), k.retries, k.inFlight, k.lockWaits]),
        )
      : '',
  ]
    .filter((line) => line !== '')
    .join('\n');
}
