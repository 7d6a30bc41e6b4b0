import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { WORKER_DEFAULTS } from '../../../../lambda/constants.ts';
import { AUDIT_PK_PREFIX, WORKER_SK_PREFIX } from '../../../../lambda/stores/dynamodb/item-keys.ts';
import { currentActor } from '../../current-actor.ts';
import type { AuditTrail } from '../../ops-store.ts';
import { dynamoAuditItem } from './dynamo-audit-item.ts';
import type { DynamoOpsTarget } from './dynamo-ops-table.ts';

/**
 * The DynamoDB store's audit trail (`ops_audit` as items, {@link dynamoAuditItem}): `record` puts an item (its
 * consumer from the entry, else the default one), `finish` sets its outcome, `finishedAt`, the new message id and
 * the detail's new fields on the same item. The items have no `ttl`: they are kept.
 *
 * @internal
 */
export function dynamoAuditTrail(dynamo: DynamoOpsTarget): AuditTrail {
  const consumers = new Map<string, string>();
  return {
    async record(entry, actor = currentActor()) {
      const consumer = entry.consumer ?? WORKER_DEFAULTS.consumer;
      const { auditId, item } = dynamoAuditItem({ ...entry, consumer }, actor, new Date());
      await dynamo.doc.send(
        new PutCommand({
          TableName: dynamo.tableName,
          Item: item,
          ConditionExpression: 'attribute_not_exists(PK)',
        }),
      );
      consumers.set(auditId, consumer);
      return auditId;
    },
    async finish(auditId, result) {
      const consumer = consumers.get(auditId) ?? WORKER_DEFAULTS.consumer;
      const names: Record<string, string> = { '#outcome': 'outcome', '#detail': 'detail' };
      const values: Record<string, unknown> = { ':outcome': result.outcome, ':at': new Date().toISOString() };
      const sets = ['#outcome = :outcome', 'finishedAt = :at'];
      if (result.newMessageId !== undefined) {
        sets.push('newMessageId = :mid');
        values[':mid'] = result.newMessageId;
      }
      Object.entries(result.detail ?? {}).forEach(([key, value], i) => {
        names[`#d${i}`] = key;
        values[`:d${i}`] = value;
        sets.push(`#detail.#d${i} = :d${i}`);
      });
      await dynamo.doc.send(
        new UpdateCommand({
          TableName: dynamo.tableName,
          Key: { PK: `${AUDIT_PK_PREFIX}${auditId}`, SK: `${WORKER_SK_PREFIX}${consumer}` },
          UpdateExpression: `SET ${sets.join(', ')}`,
          ConditionExpression: 'attribute_exists(PK)',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      );
    },
  };
}
