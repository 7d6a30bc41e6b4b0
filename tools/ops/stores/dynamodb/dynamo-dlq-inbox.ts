import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { INBOX_PK_PREFIX, inboxKey } from '../../../../lambda/stores/dynamodb/item-keys.ts';
import type { DlqInbox, InboxState } from '../../ops-store.ts';
import { dynamoAuditTrail } from './dynamo-audit-trail.ts';
import type { DynamoOpsTarget } from './dynamo-ops-table.ts';
import { type InboxBefore, readInbox } from './dynamo-release-claim.ts';

/** BatchGetItem reads at most 100 keys a call. */
const BATCH_GET_LIMIT = 100;
/** Rounds of `UnprocessedKeys` (throttled reads) before the states are given up. */
const MAX_UNPROCESSED_ROUNDS = 5;

/**
 * The DLQ commands' view of the DynamoDB store: the inbox items of the DLQ's keys (consistent BatchGetItem), the
 * re-arm of a redriven key, and the audit items of each move.
 *
 * DynamoDB holds no lock across the send, so the re-arm comes first and is undone if the send fails: a conditional
 * update (FAILED_TERMINAL or FAILED_RETRYABLE, not IDEMPOTENCY_HASH_MISMATCH, unchanged since read: the same status
 * and lease token) to FAILED_RETRYABLE with `attempts` 0, as on PostgreSQL; a worker that receives the copy sees it
 * re-armed. A failed send puts the item back as it was (conditioned on the re-arm still being there). A key that
 * changed meanwhile (a copy is being processed) is not re-armed, and the message is sent as it is: the inbox decides.
 * A command that dies between the re-arm and the send leaves the key re-armed and the message in the DLQ, so a
 * second redrive sends it.
 *
 * @internal
 */
export function dynamoDlqInbox(dynamo: DynamoOpsTarget): DlqInbox {
  return {
    states: (consumer, keys) => readStates(dynamo, consumer, keys),
    async rearmAround(key, send) {
      const before = await readInbox(dynamo, key.consumer, key.idempotencyKey);
      const rearmed = before !== null && isRearmable(before) && (await rearm(dynamo, key, before));
      try {
        await send();
      } catch (error) {
        if (rearmed && before) await restore(dynamo, key, before);
        throw error;
      }
      return rearmed;
    },
    audit: dynamoAuditTrail(dynamo),
  };
}

/** As on PostgreSQL: failed items get a fresh start; a hash mismatch belongs to another request. */
function isRearmable(before: InboxBefore): boolean {
  return (
    (before.status === 'FAILED_TERMINAL' || before.status === 'FAILED_RETRYABLE') &&
    before.failureCode !== 'IDEMPOTENCY_HASH_MISMATCH'
  );
}

/** The inbox items of `keys` (consistent reads, 100 a call, throttled keys read again). */
async function readStates(
  dynamo: DynamoOpsTarget,
  consumer: string,
  keys: readonly string[],
): Promise<ReadonlyMap<string, InboxState>> {
  const states = new Map<string, InboxState>();
  const unique = [...new Set(keys)];
  for (let start = 0; start < unique.length; start += BATCH_GET_LIMIT) {
    let pending: Record<string, unknown>[] = unique
      .slice(start, start + BATCH_GET_LIMIT)
      .map((key) => ({ ...inboxKey(consumer, key) }));
    for (let round = 0; pending.length > 0; round += 1) {
      if (round === MAX_UNPROCESSED_ROUNDS) {
        throw new Error(
          `DynamoDB left ${pending.length} inbox reads of ${dynamo.tableName} unprocessed after ${round} rounds (throttled); run the command again`,
        );
      }
      const { Responses, UnprocessedKeys } = await dynamo.doc.send(
        new BatchGetCommand({
          RequestItems: {
            [dynamo.tableName]: {
              Keys: pending,
              ConsistentRead: true,
              ProjectionExpression: 'PK, #status, failureCode, attempts, firstVersion',
              ExpressionAttributeNames: { '#status': 'status' },
            },
          },
        }),
      );
      for (const item of Responses?.[dynamo.tableName] ?? []) {
        states.set(String(item.PK).slice(INBOX_PK_PREFIX.length), {
          status: String(item.status),
          failureCode: typeof item.failureCode === 'string' ? item.failureCode : null,
          attempts: Number(item.attempts ?? 0),
          firstVersion: typeof item.firstVersion === 'string' ? item.firstVersion : null,
        });
      }
      pending = (UnprocessedKeys?.[dynamo.tableName]?.Keys ?? []) as Record<string, unknown>[];
    }
  }
  return states;
}

/** FAILED_RETRYABLE with `attempts` 0, if the item is as it was read; false when it changed meanwhile. */
async function rearm(
  dynamo: DynamoOpsTarget,
  key: { readonly consumer: string; readonly idempotencyKey: string },
  before: InboxBefore,
): Promise<boolean> {
  try {
    await dynamo.doc.send(
      new UpdateCommand({
        TableName: dynamo.tableName,
        Key: inboxKey(key.consumer, key.idempotencyKey),
        UpdateExpression: 'SET #status = :retryable, attempts = :zero',
        ConditionExpression: '#status = :before AND leaseToken = :lease',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':retryable': 'FAILED_RETRYABLE',
          ':zero': 0,
          ':before': before.status,
          ':lease': before.leaseToken,
        },
      }),
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

/** Puts a re-armed item back as it was, unless a worker has taken it since (then the worker's state stands). */
async function restore(
  dynamo: DynamoOpsTarget,
  key: { readonly consumer: string; readonly idempotencyKey: string },
  before: InboxBefore,
): Promise<void> {
  try {
    await dynamo.doc.send(
      new UpdateCommand({
        TableName: dynamo.tableName,
        Key: inboxKey(key.consumer, key.idempotencyKey),
        UpdateExpression: 'SET #status = :before, attempts = :attempts',
        ConditionExpression: '#status = :retryable AND attempts = :zero AND leaseToken = :lease',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':before': before.status,
          ':attempts': before.attempts,
          ':retryable': 'FAILED_RETRYABLE',
          ':zero': 0,
          ':lease': before.leaseToken,
        },
      }),
    );
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  }
}
