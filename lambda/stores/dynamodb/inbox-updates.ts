import { cutUtf8 } from './cut-utf8.ts';
import type { DynamoStore } from './dynamo-store.ts';
import { inboxExpiry } from './inbox-ttl.ts';
import { MAX_FAILURE_CODE_BYTES, MAX_FAILURE_MESSAGE_BYTES } from './item-bounds.ts';
import { inboxKey } from './item-keys.ts';

/** The `Update` of a TransactWriteItems entry (or of an UpdateItem) in the document client's form. */
export interface InboxUpdate {
  readonly TableName: string;
  readonly Key: { PK: string; SK: string };
  readonly UpdateExpression: string;
  readonly ConditionExpression: string;
  readonly ExpressionAttributeNames: Record<string, string>;
  readonly ExpressionAttributeValues: Record<string, unknown>;
}

/** Every write of the lease holder: the item is still PROCESSING under its lease token. */
const LEASE_HELD = '#status = :processing AND leaseToken = :token';

/**
 * The inbox item's completion: COMPLETED with its result reference, failure cleared, TTL renewed. Conditioned on
 * the lease (`status = PROCESSING` and this delivery's token): a worker whose lease was taken over commits nothing.
 *
 * @internal
 */
export function completeInboxUpdate(
  store: DynamoStore,
  input: { consumer: string; idempotencyKey: string; leaseToken: string; resultRef?: string; nowMs: number },
): InboxUpdate {
  return {
    TableName: store.tableName,
    Key: inboxKey(input.consumer, input.idempotencyKey),
    UpdateExpression: `SET #status = :completed, completedAt = :now, #ttl = :ttl${input.resultRef ? ', resultRef = :ref' : ''} REMOVE failureCode, failureMessage`,
    ConditionExpression: LEASE_HELD,
    ExpressionAttributeNames: { '#status': 'status', '#ttl': 'ttl' },
    ExpressionAttributeValues: {
      ':completed': 'COMPLETED',
      ':processing': 'PROCESSING',
      ':token': input.leaseToken,
      ':now': new Date(input.nowMs).toISOString(),
      ':ttl': inboxExpiry(input.nowMs, store.inboxTtlSeconds),
      ...(input.resultRef ? { ':ref': input.resultRef.slice(0, 300) } : {}),
    },
  };
}

/**
 * A failed attempt of the lease holder: FAILED_RETRYABLE (the next delivery takes the item, attempt n + 1) or
 * FAILED_TERMINAL (it stays terminal), with code and message. The attempt was counted when the lease was taken.
 * Code and message are cut at their bounds (`item-bounds.ts`): a handler's code is its author's text, of any length,
 * and an item too large for DynamoDB would fail this write on every delivery.
 *
 * @internal
 */
export function failInboxUpdate(
  store: DynamoStore,
  input: {
    consumer: string;
    idempotencyKey: string;
    leaseToken: string;
    status: 'FAILED_RETRYABLE' | 'FAILED_TERMINAL';
    code: string;
    message: string;
    nowMs: number;
  },
): InboxUpdate {
  return {
    TableName: store.tableName,
    Key: inboxKey(input.consumer, input.idempotencyKey),
    UpdateExpression:
      'SET #status = :failed, failedAt = :now, failureCode = :code, failureMessage = :message, #ttl = :ttl',
    ConditionExpression: LEASE_HELD,
    ExpressionAttributeNames: { '#status': 'status', '#ttl': 'ttl' },
    ExpressionAttributeValues: {
      ':failed': input.status,
      ':processing': 'PROCESSING',
      ':token': input.leaseToken,
      ':now': new Date(input.nowMs).toISOString(),
      ':code': cutUtf8(input.code, MAX_FAILURE_CODE_BYTES, '…'),
      ':message': cutUtf8(input.message, MAX_FAILURE_MESSAGE_BYTES, '…'),
      ':ttl': inboxExpiry(input.nowMs, store.inboxTtlSeconds),
    },
  };
}

/**
 * A reused key's freeze (the pattern document's "if hash mismatch: mark FAILED_TERMINAL", as on PostgreSQL): the
 * item of the first request becomes FAILED_TERMINAL with `IDEMPOTENCY_HASH_MISMATCH`, keeping its hash, so neither
 * message runs again until an operator looks. Conditioned on the item still being another request's and neither
 * COMPLETED (its effect exists: it keeps its status) nor PROCESSING under a live lease (that delivery decides first;
 * the gate answered IN_PROGRESS_ELSEWHERE to such a key anyway).
 *
 * @internal
 */
export function freezeMismatchUpdate(
  store: DynamoStore,
  input: {
    consumer: string;
    idempotencyKey: string;
    requestHash: string;
    code: string;
    message: string;
    nowMs: number;
  },
): InboxUpdate {
  return {
    TableName: store.tableName,
    Key: inboxKey(input.consumer, input.idempotencyKey),
    UpdateExpression:
      'SET #status = :terminal, failedAt = :now, failureCode = :code, failureMessage = :message',
    ConditionExpression:
      'attribute_exists(PK) AND requestHash <> :hash AND #status <> :completed AND ' +
      'NOT (#status = :processing AND leaseExpiresAt > :nowMs)',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: {
      ':terminal': 'FAILED_TERMINAL',
      ':completed': 'COMPLETED',
      ':processing': 'PROCESSING',
      ':hash': input.requestHash,
      ':now': new Date(input.nowMs).toISOString(),
      ':nowMs': input.nowMs,
      ':code': cutUtf8(input.code, MAX_FAILURE_CODE_BYTES),
      ':message': cutUtf8(input.message, MAX_FAILURE_MESSAGE_BYTES),
    },
  };
}
