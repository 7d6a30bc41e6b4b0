import type { QueueRetentions } from '../../retention/retention-guard.ts';

/**
 * The queues' retentions assumed when none are given: 14 days each, the SQS maximum, safe for any queue.
 *
 * @internal
 */
export const DEFAULT_QUEUE_RETENTIONS: QueueRetentions = {
  sourceRetentionSeconds: 14 * 86_400,
  dlqRetentionSeconds: 14 * 86_400,
};

/** Slack added to the retention window: DynamoDB deletes expired items some time after `ttl`, never before. */
const TTL_SLACK_SECONDS = 86_400;

/**
 * How long an inbox item lives after its last write, in seconds: source retention + DLQ retention (the PostgreSQL
 * purge guard's rule, `checkInboxRetention`: a copy of a message can sit in the queue and then in the DLQ for that
 * long, and only the COMPLETED item makes it a duplicate), plus a day of slack.
 *
 * @internal
 */
export function inboxTtlSeconds(retention: QueueRetentions): number {
  return retention.sourceRetentionSeconds + retention.dlqRetentionSeconds + TTL_SLACK_SECONDS;
}

/**
 * The `ttl` attribute (epoch seconds) of an inbox item written at `nowMs`.
 *
 * @internal
 */
export function inboxExpiry(nowMs: number, ttlSeconds: number): number {
  return Math.floor(nowMs / 1000) + ttlSeconds;
}
