import { randomUUID } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { ATTEMPT_HISTORY_LIMIT } from '../../attempt-history.ts';
import type { Envelope } from '../../worker/envelope.ts';
import { documentClient } from './document-client.ts';
import type { DynamoStore } from './dynamo-store.ts';
import type { DynamoInboxItem } from './inbox-item.ts';
import { inboxExpiry } from './inbox-ttl.ts';
import { inboxKey } from './item-keys.ts';

/**
 * What identifies a delivery at the gate.
 *
 * @internal
 */
export interface DynamoInboxEntry {
  readonly consumer: string;
  readonly envelope: Envelope;
  readonly requestHash: string;
  /** SQS messageId of this delivery. */
  readonly sqsMessageId: string;
  /** The producer's trace id, when the message carries one (kept on the item, as `worker_inbox.trace_id`). */
  readonly traceId?: string;
  /** The worker version handling the delivery: `firstVersion` of an item the gate creates. */
  readonly workerVersion?: string;
}

/**
 * What the gate decided for a delivery.
 *
 * @internal
 */
export type DynamoGate =
  /** This delivery holds the lease: run the handler, commit with `leaseToken`. `takenOver`: from a dead worker. */
  | {
      readonly kind: 'claimed';
      readonly leaseToken: string;
      readonly attempts: number;
      readonly takenOver?: 'FAILED_RETRYABLE' | 'PROCESSING';
    }
  /** COMPLETED with the same request: acknowledge (`lastMessageId`: the item's, before this delivery). */
  | { readonly kind: 'duplicate'; readonly attempts: number; readonly lastMessageId: string | undefined }
  /** The key belongs to another request: terminal `IDEMPOTENCY_HASH_MISMATCH` (the record store freezes the item). */
  | { readonly kind: 'hashMismatch'; readonly status: string }
  /** Another delivery holds a live lease (or won the takeover): retryable `IN_PROGRESS_ELSEWHERE`. */
  | { readonly kind: 'inProgress' }
  /** FAILED_TERMINAL: stays terminal. */
  | { readonly kind: 'terminal'; readonly failureCode: string | undefined; readonly attempts: number }
  /** CANCELLED by an operator: terminal `CANCELLED`, never applied (whatever the request). */
  | { readonly kind: 'cancelled'; readonly attempts: number };

/*
 * The lease, on a timeline (one key, two deliveries A and B):
 *
 *   A: put (attribute_not_exists) ─► PROCESSING, token a, leaseExpiresAt = now + A's time left + margin
 *   B: put fails; ALL_OLD says PROCESSING and the lease is live ─► IN_PROGRESS_ELSEWHERE (retried with backoff)
 *   A dies (killed after the gate). Its lease runs out — or SQS hands A's message back (A's receive is over).
 *   B: put fails; ALL_OLD says PROCESSING, lease expired (or lastMessageId is B's messageId)
 *      ─► update `leaseToken = a` ─► token b, attempts + 1
 *   A (if it was only slow): its transaction's inbox condition `leaseToken = a` fails ─► cancelled whole: no effect
 *
 * Exactly one taker wins a takeover: the update is conditioned on the old token, which the winner replaces.
 */

/** `attribute_not_exists(PK)`: the key was never seen (or its item expired). */
const KEY_DOES_NOT_EXIST = 'attribute_not_exists(PK)';
/** The lease being taken over is still the one that was read. */
const LEASE_UNCHANGED = '#status = :oldStatus AND leaseToken = :oldToken AND requestHash = :hash';

/**
 * The gate of the DynamoDB store (pattern document §8): a conditional PutItem of a PROCESSING inbox item for a new
 * key; for a known key, the existing item (returned by the failed condition, `ALL_OLD`, without a second read)
 * decides: CANCELLED (an operator's `inbox cancel`) → cancelled; PROCESSING under a held lease → in progress
 * elsewhere (whatever its request); another hash → mismatch;
 * COMPLETED → duplicate; FAILED_TERMINAL → terminal; FAILED_RETRYABLE, or PROCESSING whose lease expired or whose
 * message this is again (`leaseAbandoned`) → taken (attempt n + 1) with an update conditioned on the old lease token
 * (exactly once).
 *
 * @param input.leaseMs how long this delivery may hold the item: its time left plus the store's margin.
 * @param input.signal aborts the gate's requests (the record's call deadline passed).
 *
 * @internal
 */
export async function claimDynamoInbox(
  store: DynamoStore,
  entry: DynamoInboxEntry,
  input: { nowMs: number; leaseMs: number; signal?: AbortSignal },
): Promise<DynamoGate> {
  const options = { abortSignal: input.signal };
  const e = entry.envelope;
  const key = inboxKey(entry.consumer, e.idempotencyKey);
  const now = new Date(input.nowMs).toISOString();
  const leaseToken = randomUUID();
  const ttl = inboxExpiry(input.nowMs, store.inboxTtlSeconds);
  const leaseExpiresAt = input.nowMs + input.leaseMs;
  let existing: DynamoInboxItem | undefined;
  try {
    const item: DynamoInboxItem = {
      ...key,
      status: 'PROCESSING',
      requestHash: entry.requestHash,
      messageType: e.messageType,
      aggregateType: e.aggregateType,
      aggregateId: e.aggregateId,
      startedAt: now,
      leaseExpiresAt,
      leaseToken,
      attempts: 1,
      ttl,
      firstSeenAt: now,
      lastMessageId: entry.sqsMessageId,
      ...(e.correlationId ? { correlationId: e.correlationId } : {}),
      ...(entry.traceId ? { traceId: entry.traceId } : {}),
      ...(entry.workerVersion ? { firstVersion: entry.workerVersion } : {}),
    };
    await documentClient(store).send(
      new PutCommand({
        TableName: store.tableName,
        Item: item,
        ConditionExpression: KEY_DOES_NOT_EXIST,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
      options,
    );
    return { kind: 'claimed', leaseToken, attempts: 1 };
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    existing = error.Item
      ? (unmarshall(error.Item) as DynamoInboxItem)
      : await read(store, key, input.signal);
  }
  if (!existing) return { kind: 'inProgress' }; // expired and deleted between the put and the read: rare, retried
  // Cancelled first: the put's condition refused the key atomically, and no takeover below matches its status.
  if (existing.status === 'CANCELLED') return { kind: 'cancelled', attempts: existing.attempts ?? 0 };
  // A held lease first, whatever its request: the delivery that holds it decides (PostgreSQL's row lock, the same).
  if (existing.status === 'PROCESSING' && !leaseAbandoned(existing, entry, input.nowMs))
    return { kind: 'inProgress' };
  if (existing.requestHash !== entry.requestHash) return { kind: 'hashMismatch', status: existing.status };
  if (existing.status === 'COMPLETED')
    return { kind: 'duplicate', attempts: existing.attempts, lastMessageId: existing.lastMessageId };
  if (existing.status === 'FAILED_TERMINAL')
    return { kind: 'terminal', failureCode: existing.failureCode, attempts: existing.attempts };
  // FAILED_RETRYABLE, or PROCESSING under an abandoned lease: take it, once.
  try {
    await documentClient(store).send(
      new UpdateCommand({
        TableName: store.tableName,
        Key: key,
        UpdateExpression:
          'SET #status = :processing, startedAt = :now, leaseExpiresAt = :expires, leaseToken = :token, ' +
          `lastMessageId = :messageId, #ttl = :ttl ADD attempts :one${historyTrim(existing)}`,
        ConditionExpression: LEASE_UNCHANGED,
        ExpressionAttributeNames: { '#status': 'status', '#ttl': 'ttl' },
        ExpressionAttributeValues: {
          ':processing': 'PROCESSING',
          ':now': now,
          ':expires': leaseExpiresAt,
          ':token': leaseToken,
          ':messageId': entry.sqsMessageId,
          ':ttl': ttl,
          ':one': 1,
          ':oldStatus': existing.status,
          ':oldToken': existing.leaseToken,
          ':hash': entry.requestHash,
        },
      }),
      options,
    );
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return { kind: 'inProgress' }; // another taker won
    throw error;
  }
  return {
    kind: 'claimed',
    leaseToken,
    attempts: existing.attempts + 1,
    takenOver: existing.status === 'PROCESSING' ? 'PROCESSING' : 'FAILED_RETRYABLE',
  };
}

/**
 * The REMOVE clause that leaves room for one more attempt in the item's history (`attemptHistory[0], …`), or ''.
 * DynamoDB cannot append to a list and cut it in one update (SET and REMOVE of one list overlap), so the cut happens
 * here: the takeover is the one write before a lease holder's next append, the history it removes from is the one
 * the gate read (only a lease holder appends, and the takeover is conditioned on that lease being unchanged), and
 * the append (`list_append` in the completion or failure) then keeps at most `ATTEMPT_HISTORY_LIMIT`.
 */
function historyTrim(existing: DynamoInboxItem): string {
  const excess = (existing.attemptHistory?.length ?? 0) - (ATTEMPT_HISTORY_LIMIT - 1);
  if (excess <= 0) return '';
  return ` REMOVE ${Array.from({ length: excess }, (_, i) => `attemptHistory[${i}]`).join(', ')}`;
}

/**
 * True when a PROCESSING item's lease no longer stands for a running delivery: it expired, or this delivery is SQS
 * handing back the very message that took it (`lastMessageId`). SQS redelivers a message only once its earlier
 * receive is over — a Lambda invocation past its timeout (the queue's visibility is at least the function's timeout),
 * a poller that stopped extending the visibility — so that receive's worker left the lease behind: typically it lost
 * the database after the gate and could not write its failure. Waiting for the lease would spend the message's
 * receives on IN_PROGRESS_ELSEWHERE and could send a good message to the DLQ unattempted. Should the earlier worker
 * still be running after all, its transaction is conditioned on its lease token, which the takeover replaces: it is
 * cancelled whole (LEASE_LOST) and nothing of it is applied.
 */
function leaseAbandoned(existing: DynamoInboxItem, entry: DynamoInboxEntry, nowMs: number): boolean {
  return existing.leaseExpiresAt <= nowMs || existing.lastMessageId === entry.sqsMessageId;
}

/** A strongly consistent read of an item (when a failed condition returned no item). */
async function read(
  store: DynamoStore,
  key: { PK: string; SK: string },
  signal?: AbortSignal,
): Promise<DynamoInboxItem | undefined> {
  const result = await documentClient(store).send(
    new GetCommand({ TableName: store.tableName, Key: key, ConsistentRead: true }),
    { abortSignal: signal },
  );
  return result.Item as DynamoInboxItem | undefined;
}

/**
 * True when the key is COMPLETED with this request hash: a duplicate of a referenced message is then acknowledged
 * without reading S3 again. One strongly consistent GetItem.
 *
 * @internal
 */
export async function dynamoCompletedAlready(
  store: DynamoStore,
  consumer: string,
  idempotencyKey: string,
  requestHash: string,
): Promise<boolean> {
  const item = await read(store, inboxKey(consumer, idempotencyKey));
  return item?.status === 'COMPLETED' && item.requestHash === requestHash;
}
