import { createHash } from 'node:crypto';
import type { SQSRecord } from 'aws-lambda';
import type { QuarantineReason } from '../../worker/quarantine-reason.ts';
import type { DynamoStore } from './dynamo-store.ts';
import { fitQuarantineItem } from './fit-quarantine-item.ts';
import type { InboxUpdate } from './inbox-updates.ts';
import { quarantineKey } from './item-keys.ts';

/**
 * The write that keeps a terminal message (the `worker_quarantine` row of the PostgreSQL store): raw body, SQS
 * attributes and message attributes, reason. The same body of the same consumer is one item (`PK =
 * QUARANTINE#<sha256 of the body>`), counting occurrences; quarantined again after a release it becomes active
 * again. No TTL: quarantine items are kept until an operator deals with them. The item always fits DynamoDB's
 * 400 KB: what does not fit is cut or dropped and said so on the item ({@link fitQuarantineItem}).
 *
 * @internal
 */
export function quarantineUpdate(
  store: DynamoStore,
  input: {
    consumer: string;
    record: SQSRecord;
    reason: QuarantineReason;
    nowMs: number;
    /** The worker version quarantining the message (`workerVersion` on the item, the latest time). */
    workerVersion?: string;
  },
): Omit<InboxUpdate, 'ConditionExpression' | 'ExpressionAttributeNames'> {
  const bodyHash = createHash('sha256')
    .update(input.record.body ?? '')
    .digest('hex');
  const key = quarantineKey(input.consumer, bodyHash);
  const now = new Date(input.nowMs).toISOString();
  const { attributes } = fitQuarantineItem({ ...input, key, bodyHash, now });
  const names = Object.keys(attributes);
  const values: Record<string, unknown> = { ':now': now, ':one': 1 };
  names.forEach((name, i) => {
    values[`:v${i}`] = attributes[name];
  });
  const sets = [
    ...names.map((name, i) => `${name} = :v${i}`),
    'firstQuarantinedAt = if_not_exists(firstQuarantinedAt, :now)',
  ];
  return {
    TableName: store.tableName,
    Key: key,
    UpdateExpression: `SET ${sets.join(', ')} ADD occurrences :one REMOVE releasedAt`,
    ExpressionAttributeValues: values,
  };
}
