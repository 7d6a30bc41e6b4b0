import type { AttemptOutcome, AttemptRecord } from '../../attempt-history.ts';
import { cutUtf8 } from './cut-utf8.ts';
import type { DynamoStore } from './dynamo-store.ts';
import { inboxExpiry } from './inbox-ttl.ts';
import { MAX_FAILURE_CODE_BYTES, MAX_FAILURE_MESSAGE_BYTES, MAX_MESSAGE_ID_BYTES } from './item-bounds.ts';
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
 * The lease holder's attempt as its history entry records it: the delivery, the worker version, the attempt number.
 *
 * @internal
 */
export type LeaseAttempt = Pick<AttemptRecord, 'version' | 'messageId' | 'attempt' | 'receiveCount'>;

/**
 * Appends the attempt to `attemptHistory` (created by the first append): the list was cut to leave room for it by the
 * takeover that started this attempt (`claim-dynamo-inbox.ts`), so it holds at most `ATTEMPT_HISTORY_LIMIT`.
 */
const APPEND_ATTEMPT = 'attemptHistory = list_append(if_not_exists(attemptHistory, :noAttempts), :attempt)';

/** The values of {@link APPEND_ATTEMPT}: the attempt's entry, ending `outcome` at `at`. */
function attemptValues(
  attempt: LeaseAttempt | undefined,
  entry: { outcome: AttemptOutcome; code?: string; at: string },
): Record<string, unknown> {
  const record: AttemptRecord = {
    at: entry.at,
    outcome: entry.outcome,
    ...(entry.code ? { code: entry.code } : {}),
    ...(attempt?.version ? { version: attempt.version } : {}),
    ...(attempt?.messageId ? { messageId: cutUtf8(attempt.messageId, MAX_MESSAGE_ID_BYTES, '…') } : {}),
    ...(attempt?.attempt !== undefined ? { attempt: attempt.attempt } : {}),
    ...(attempt?.receiveCount !== undefined ? { receiveCount: attempt.receiveCount } : {}),
  };
  return { ':noAttempts': [], ':attempt': [record] };
}

/**
 * The inbox item's completion: COMPLETED with its result reference, failure cleared, TTL renewed. Conditioned on
 * the lease (`status = PROCESSING` and this delivery's token): a worker whose lease was taken over commits nothing.
 *
 * @internal
 */
export function completeInboxUpdate(
  store: DynamoStore,
  input: {
    consumer: string;
    idempotencyKey: string;
    leaseToken: string;
    resultRef?: string;
    nowMs: number;
    attempt?: LeaseAttempt;
  },
): InboxUpdate {
  const now = new Date(input.nowMs).toISOString();
  return {
    TableName: store.tableName,
    Key: inboxKey(input.consumer, input.idempotencyKey),
    UpdateExpression: `SET #status = :completed, completedAt = :now, #ttl = :ttl${input.resultRef ? ', resultRef = :ref' : ''}, ${APPEND_ATTEMPT} REMOVE failureCode, failureMessage`,
    ConditionExpression: LEASE_HELD,
    ExpressionAttributeNames: { '#status': 'status', '#ttl': 'ttl' },
    ExpressionAttributeValues: {
      ':completed': 'COMPLETED',
      ':processing': 'PROCESSING',
      ':token': input.leaseToken,
      ':now': now,
      ...attemptValues(input.attempt, { outcome: 'COMPLETED', at: now }),
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
    attempt?: LeaseAttempt;
  },
): InboxUpdate {
  const now = new Date(input.nowMs).toISOString();
  const code = cutUtf8(input.code, MAX_FAILURE_CODE_BYTES, '…');
  return {
    TableName: store.tableName,
    Key: inboxKey(input.consumer, input.idempotencyKey),
    UpdateExpression: `SET #status = :failed, failedAt = :now, failureCode = :code, failureMessage = :message, #ttl = :ttl, ${APPEND_ATTEMPT}`,
    ConditionExpression: LEASE_HELD,
    ExpressionAttributeNames: { '#status': 'status', '#ttl': 'ttl' },
    ExpressionAttributeValues: {
      ':failed': input.status,
      ':processing': 'PROCESSING',
      ':token': input.leaseToken,
      ':now': now,
      ':code': code,
      ...attemptValues(input.attempt, { outcome: input.status, code, at: now }),
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
