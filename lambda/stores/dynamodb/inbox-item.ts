/**
 * The inbox item of the DynamoDB store as it is stored (a leaf module: types only). The key is
 * `PK = IDEMP#<idempotencyKey>`, `SK = WORKER#<consumer>` (see `item-keys.ts`).
 */

import type { AttemptRecord } from '../../attempt-history.ts';

/**
 * Status of an inbox item (the pattern document's state machine, without RECEIVED: the gate writes PROCESSING).
 * CANCELLED: an operator cancelled the key (`sqs-worker inbox cancel`); the item may then carry only the key, the
 * status and the `cancelled*` attributes (a key cancelled before any copy arrived), and has no `ttl`.
 *
 * @internal
 */
export type DynamoInboxStatus =
  | 'PROCESSING'
  | 'COMPLETED'
  | 'FAILED_RETRYABLE'
  | 'FAILED_TERMINAL'
  | 'CANCELLED';

/**
 * An inbox item.
 *
 * @internal
 */
export interface DynamoInboxItem {
  readonly PK: string;
  readonly SK: string;
  readonly status: DynamoInboxStatus;
  /** sha256 of the canonical request (the same as `worker_inbox.request_hash`). */
  readonly requestHash: string;
  readonly messageType: string;
  /** The envelope's aggregate (absent on items written before the type was kept: their aggregate type is unknown). */
  readonly aggregateType?: string;
  readonly aggregateId: string;
  /** ISO time the current lease started (the gate or a takeover). */
  readonly startedAt: string;
  /** Epoch milliseconds after which a PROCESSING item may be taken over (its worker is gone). */
  readonly leaseExpiresAt: number;
  /** Random token of the current lease: every write of the lease holder is conditioned on it. */
  readonly leaseToken: string;
  /** Business attempts so far (deliveries that got the lease). */
  readonly attempts: number;
  /** Epoch seconds when DynamoDB's TTL may delete the item. */
  readonly ttl: number;
  readonly firstSeenAt?: string;
  readonly lastMessageId?: string;
  readonly correlationId?: string;
  /** The producer's trace id of the delivery that created the item. */
  readonly traceId?: string;
  /** The worker version that created the item (`worker_inbox.first_version`); never changed after. */
  readonly firstVersion?: string;
  /**
   * The item's last attempts, oldest first, at most `ATTEMPT_HISTORY_LIMIT` (`worker_inbox.attempt_history`): added
   * by the lease holder's completion or failure, trimmed by the takeover that starts the next attempt.
   */
  readonly attemptHistory?: readonly AttemptRecord[];
  readonly completedAt?: string;
  readonly resultRef?: string;
  readonly failedAt?: string;
  readonly failureCode?: string;
  readonly failureMessage?: string;
  /** CANCELLED: who cancelled the key, when (ISO) and why. */
  readonly cancelledBy?: string;
  readonly cancelledAt?: string;
  readonly cancelReason?: string;
  /** Duplicates that were the same SQS message again (`count-dynamo-duplicate.ts`); absent until the first. */
  readonly redeliveryCount?: number;
  /** Duplicates with a new SQS messageId (the producer sent again); absent until the first. */
  readonly resendCount?: number;
  /** ISO time of the latest counted duplicate. */
  readonly lastSeenAt?: string;
}
