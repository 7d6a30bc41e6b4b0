import { createHash } from 'node:crypto';

/** SQS FIFO ids: 1–128 characters, ASCII letters, digits and punctuation (`!` to `~`). */
const FIFO_ID = /^[\x21-\x7e]{1,128}$/;

/**
 * The FIFO attributes of one outbox message.
 *
 * @internal
 */
export interface FifoMessageIds {
  /** `aggregateId`: messages of one aggregate are delivered in order, different aggregates in parallel. */
  readonly MessageGroupId: string;
  /** `idempotencyKey`: SQS drops a resend of the same event within its 5-minute deduplication window. */
  readonly MessageDeduplicationId: string;
}

/**
 * The value itself when SQS accepts it as a FIFO id, otherwise `sha256:` + its hex digest (a stable,
 * valid id for keys longer than 128 characters or with spaces or non-ASCII characters).
 */
function fifoSafe(value: string): string {
  return FIFO_ID.test(value) ? value : `sha256:${createHash('sha256').update(value).digest('hex')}`;
}

/**
 * MessageGroupId = aggregateId for a standard queue (SQS fair queues: the group is the tenant whose backlog is kept
 * from delaying the others; a standard queue takes no MessageDeduplicationId), made safe as for FIFO.
 *
 * @internal
 */
export function fairQueueGroup(envelope: { aggregateId: string }): Pick<FifoMessageIds, 'MessageGroupId'> {
  return { MessageGroupId: fifoSafe(envelope.aggregateId) };
}

/**
 * MessageGroupId = aggregateId and MessageDeduplicationId = idempotencyKey for a FIFO queue, each replaced by
 * a stable digest when SQS would reject it (envelope keys may be 200 characters; SQS FIFO ids at most 128).
 *
 * @internal
 */
export function fifoMessageIds(envelope: { aggregateId: string; idempotencyKey: string }): FifoMessageIds {
  return {
    MessageGroupId: fifoSafe(envelope.aggregateId),
    MessageDeduplicationId: fifoSafe(envelope.idempotencyKey),
  };
}
