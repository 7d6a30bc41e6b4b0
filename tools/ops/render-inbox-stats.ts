import { formatSeconds, table } from './output.ts';

/** What `inbox stats` reports, on either store. */
export interface InboxStatsResult {
  readonly consumer: string;
  readonly at: string;
  /** Rows per status (every status listed, zero included). */
  readonly byStatus: Record<string, number>;
  /** Unfinished and failed rows per status and failure code. */
  readonly failures: Array<{ status: string; failureCode: string | null; count: number }>;
  /** The oldest FAILED_RETRYABLE row, by first sighting. */
  readonly oldestRetryable: {
    idempotencyKey: string;
    messageType: string;
    failureCode: string | null;
    attempts: number;
    firstSeenAt: Date;
    ageSeconds: number;
  } | null;
  /** Rows completed in the hour before `at`. */
  readonly completedLastHour: number;
  /** Quarantine entries not released yet. */
  readonly openQuarantine: number;
  /** Duplicates counted on the inbox rows still kept (cumulative per row; retention or TTL removes them with it). */
  readonly duplicates: DuplicateCounts;
  /** Deliveries per key among the keys seen in the hour before `at`. */
  readonly deliveriesLastHour: DeliveryCounts;
}

/** Duplicates told apart, summed over a consumer's inbox (`redelivery_count`, `resend_count`). */
export interface DuplicateCounts {
  /** Copies of a completed key that were the same SQS message again (visibility ran out, crash before delete). */
  readonly redeliveries: number;
  /** Copies of a completed key with a new SQS messageId (the producer sent again). */
  readonly resends: number;
  /** Keys with at least one redelivery. */
  readonly keysRedelivered: number;
}

/**
 * Deliveries the worker counted per key (PostgreSQL `receive_count`: every claim, duplicates included; DynamoDB
 * `attempts` plus the counted duplicates), over the keys seen in a window. Copies answered IN_PROGRESS_ELSEWHERE write
 * nothing and are not counted: SQS's ApproximateReceiveCount (the `ReceiveCount` metric) sees them.
 */
export interface DeliveryCounts {
  readonly keys: number;
  readonly maxPerKey: number;
  readonly avgPerKey: number;
  /** Keys delivered more than once. */
  readonly keysSeenAgain: number;
}

/**
 * The text of `inbox stats` (shared by the PostgreSQL and the DynamoDB store).
 *
 * @internal
 */
export function renderInboxStats(result: InboxStatsResult): string {
  const { consumer, byStatus } = result;
  return [
    `Inbox of consumer ${consumer} at ${result.at}`,
    table(['status', 'rows'], Object.entries(byStatus)),
    result.failures.length > 0
      ? table(
          ['status', 'failure code', 'rows'],
          result.failures.map((f) => [f.status, f.failureCode, f.count]),
        )
      : 'No unfinished or failed rows.',
    result.oldestRetryable
      ? `Oldest FAILED_RETRYABLE: ${result.oldestRetryable.idempotencyKey} (${result.oldestRetryable.messageType}, ` +
        `${result.oldestRetryable.failureCode ?? 'no code'}, ${result.oldestRetryable.attempts} attempts, ` +
        `first seen ${formatSeconds(result.oldestRetryable.ageSeconds)} ago)`
      : 'Oldest FAILED_RETRYABLE: none',
    `Completed in the last hour: ${result.completedLastHour}`,
    `Open quarantine entries: ${result.openQuarantine}`,
    `Duplicates kept on the inbox: ${result.duplicates.redeliveries} redeliveries (the same SQS message again, on ` +
      `${result.duplicates.keysRedelivered} keys), ${result.duplicates.resends} resends (a new message, same key)`,
    `Deliveries per key seen in the last hour: ${result.deliveriesLastHour.keys} keys, ` +
      `max ${result.deliveriesLastHour.maxPerKey}, avg ${result.deliveriesLastHour.avgPerKey.toFixed(2)}, ` +
      `${result.deliveriesLastHour.keysSeenAgain} delivered more than once`,
  ].join('\n');
}
