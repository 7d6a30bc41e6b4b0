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
  ].join('\n');
}
