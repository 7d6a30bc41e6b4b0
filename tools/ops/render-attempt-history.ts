import { ATTEMPT_HISTORY_LIMIT, type AttemptRecord } from '../../lambda/attempt-history.ts';
import { table } from './output.ts';

/**
 * The attempts an inbox entry keeps, as stored (`worker_inbox.attempt_history`, the item's `attemptHistory`), read
 * defensively: an entry that is not an object with a time and an outcome is left out.
 *
 * @internal
 */
export function readAttemptHistory(value: unknown): AttemptRecord[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (entry): entry is AttemptRecord =>
      entry !== null &&
      typeof entry === 'object' &&
      typeof (entry as AttemptRecord).at === 'string' &&
      typeof (entry as AttemptRecord).outcome === 'string',
  );
}

/**
 * The attempt history of `inbox show`, shared by both stores: one line per attempt, oldest first, with the worker
 * version that ran it. Says so when the entry has none (written before the inbox kept attempts, or not attempted).
 *
 * @internal
 */
export function renderAttemptHistory(history: readonly AttemptRecord[]): string {
  if (history.length === 0) return 'Attempts: none recorded.';
  return [
    `Attempts (the last ${ATTEMPT_HISTORY_LIMIT} are kept; oldest first):`,
    table(
      ['attempt', 'at', 'outcome', 'code', 'worker version', 'sqs message id', 'receives'],
      history.map((a) => [a.attempt, a.at, a.outcome, a.code, a.version, a.messageId, a.receiveCount]),
    ),
  ].join('\n');
}
