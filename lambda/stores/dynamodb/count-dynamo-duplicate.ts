import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DuplicateCopy } from '../../worker/record-store.ts';
import { documentClient } from './document-client.ts';
import type { DynamoStore } from './dynamo-store.ts';
import { inboxKey } from './item-keys.ts';

/** What identifies the duplicate delivery being counted. */
interface DuplicateDelivery {
  readonly consumer: string;
  readonly idempotencyKey: string;
  readonly requestHash: string;
  /** SQS messageId of this delivery. */
  readonly sqsMessageId: string;
}

/** The item is still COMPLETED with this request. */
const COMPLETED_WITH_HASH = '#status = :completed AND requestHash = :hash';
/** The item's counter attribute of each kind of copy. */
const COUNTERS: Readonly<Record<DuplicateCopy, string>> = {
  REDELIVERY: 'redeliveryCount',
  RESEND: 'resendCount',
};
/** The condition that tells the copy apart when the item's last messageId is not known beforehand. */
const COPY_CONDITIONS: Readonly<Record<DuplicateCopy, string>> = {
  REDELIVERY: 'lastMessageId = :messageId',
  RESEND: '(attribute_not_exists(lastMessageId) OR lastMessageId <> :messageId)',
};

/**
 * Counts a duplicate on its COMPLETED inbox item (DynamoDB's `worker_inbox.redelivery_count` / `resend_count`): a
 * REDELIVERY when this delivery's messageId is the item's `lastMessageId` (the same SQS message again), a RESEND
 * otherwise (the producer sent again); the item's `lastMessageId` and `lastSeenAt` become this delivery's. One
 * UpdateItem, conditioned on the item still being COMPLETED with this request, when the gate's failed put returned
 * the item (`lastMessageId` known); when the key was only read before (a referenced payload's duplicate), the copy is
 * told by the condition itself: a redelivery's update first, a resend's when that condition fails (two at most).
 * Unlike PostgreSQL's claim, which counts in its own statement, this is a write of its own: a failed conditional
 * put cannot also add to the item. A throw (throttling) leaves the item as it was, so the message's next delivery
 * is told apart the same way.
 *
 * @returns the copy counted, or undefined when the item is no longer COMPLETED with this request.
 *
 * @internal
 */
export async function countDynamoDuplicate(
  store: DynamoStore,
  delivery: DuplicateDelivery,
  input: { lastMessageId?: string | undefined; known: boolean; nowMs: number; signal?: AbortSignal },
): Promise<DuplicateCopy | undefined> {
  if (input.known) {
    const copy: DuplicateCopy = input.lastMessageId === delivery.sqsMessageId ? 'REDELIVERY' : 'RESEND';
    return (await countCopy(store, delivery, copy, false, input)) ? copy : undefined;
  }
  for (const copy of ['REDELIVERY', 'RESEND'] as const) {
    if (await countCopy(store, delivery, copy, true, input)) return copy;
  }
  return undefined;
}

/** One counting UpdateItem; false when its condition failed. */
async function countCopy(
  store: DynamoStore,
  delivery: DuplicateDelivery,
  copy: DuplicateCopy,
  conditionOnCopy: boolean,
  input: { nowMs: number; signal?: AbortSignal },
): Promise<boolean> {
  try {
    await documentClient(store).send(
      new UpdateCommand({
        TableName: store.tableName,
        Key: inboxKey(delivery.consumer, delivery.idempotencyKey),
        UpdateExpression: `SET lastMessageId = :messageId, lastSeenAt = :now ADD ${COUNTERS[copy]} :one`,
        ConditionExpression: conditionOnCopy
          ? `${COMPLETED_WITH_HASH} AND ${COPY_CONDITIONS[copy]}`
          : COMPLETED_WITH_HASH,
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':messageId': delivery.sqsMessageId,
          ':now': new Date(input.nowMs).toISOString(),
          ':one': 1,
          ':completed': 'COMPLETED',
          ':hash': delivery.requestHash,
        },
      }),
      { abortSignal: input.signal },
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}
