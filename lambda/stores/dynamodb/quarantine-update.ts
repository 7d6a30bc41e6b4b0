import { createHash } from 'node:crypto';
import type { SQSRecord } from 'aws-lambda';
import type { QuarantineReason } from '../../worker/quarantine.ts';
import type { DynamoStore } from './dynamo-store.ts';
import type { InboxUpdate } from './inbox-updates.ts';
import { quarantineKey } from './item-keys.ts';

/**
 * Largest body kept on a quarantine item, in bytes: a DynamoDB item holds 400 KB. A longer body (SQS allows 1 MiB)
 * is kept cut at this length with `bodyTruncated` and the SHA-256 of the whole body.
 *
 * @internal
 */
export const MAX_QUARANTINE_BODY_BYTES = 300 * 1024;

/**
 * The write that keeps a terminal message (the `worker_quarantine` row of the PostgreSQL store): raw body, SQS
 * attributes and message attributes, reason. The same body of the same consumer is one item (`PK =
 * QUARANTINE#<sha256 of the body>`), counting occurrences; quarantined again after a release it becomes active
 * again. No TTL: quarantine items are kept until an operator deals with them.
 *
 * @internal
 */
export function quarantineUpdate(
  store: DynamoStore,
  input: { consumer: string; record: SQSRecord; reason: QuarantineReason; nowMs: number },
): Omit<InboxUpdate, 'ConditionExpression' | 'ExpressionAttributeNames'> {
  const { record, reason } = input;
  const body = record.body ?? '';
  const bodyHash = createHash('sha256').update(body).digest('hex');
  const bytes = Buffer.from(body, 'utf8');
  const truncated = bytes.length > MAX_QUARANTINE_BODY_BYTES;
  const now = new Date(input.nowMs).toISOString();
  const values: Record<string, unknown> = {
    ':consumer': input.consumer,
    ':bodyHash': bodyHash,
    ':body': truncated ? bytes.subarray(0, MAX_QUARANTINE_BODY_BYTES).toString('utf8') : body,
    ':truncated': truncated,
    ':messageId': record.messageId,
    ':code': reason.code,
    ':message': reason.message,
    ':attributes': JSON.parse(JSON.stringify(record.attributes ?? {})),
    ':messageAttributes': JSON.stringify(record.messageAttributes ?? {}),
    ':arn': record.eventSourceARN ?? '',
    ':now': now,
    ':one': 1,
  };
  const sets = [
    'consumer = :consumer',
    'bodyHash = :bodyHash',
    'body = :body',
    'bodyTruncated = :truncated',
    'sqsMessageId = :messageId',
    'reasonCode = :code',
    'reasonMessage = :message',
    'sqsAttributes = :attributes',
    'messageAttributes = :messageAttributes',
    'eventSourceArn = :arn',
    'firstQuarantinedAt = if_not_exists(firstQuarantinedAt, :now)',
    'lastQuarantinedAt = :now',
  ];
  if (reason.idempotencyKey) {
    sets.push('idempotencyKey = :key');
    values[':key'] = reason.idempotencyKey;
  }
  if (reason.messageType) {
    sets.push('messageType = :type');
    values[':type'] = reason.messageType;
  }
  return {
    TableName: store.tableName,
    Key: quarantineKey(input.consumer, bodyHash),
    UpdateExpression: `SET ${sets.join(', ')} ADD occurrences :one REMOVE releasedAt`,
    ExpressionAttributeValues: values,
  };
}
