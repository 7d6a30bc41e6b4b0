import { createHash } from 'node:crypto';
import { DeleteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { inboxKey, quarantineKey } from '../../../../lambda/stores/dynamodb/item-keys.ts';
import type { CanaryCleanup, CanaryStore } from '../../canary-store.ts';
import type { DynamoOpsTarget } from './dynamo-ops-table.ts';

/**
 * The canaries' state in the DynamoDB store's table for `sqs-worker smoke`: the inbox items `IDEMP#<key>` and the
 * poison canary's quarantine item `QUARANTINE#<sha256 of its body>`, read consistently and deleted with the
 * operator's credentials (the worker's role may not delete them; an operator's usually may: a refusal is reported).
 */
export function dynamoCanaryStore(target: DynamoOpsTarget, consumer: string): CanaryStore {
  const { doc, tableName } = target;
  const bodyHash = (body: string) => createHash('sha256').update(body).digest('hex');
  return {
    kind: 'dynamodb',
    recordsDuplicates: false,
    async inbox(key) {
      const { Item } = await doc.send(
        new GetCommand({ TableName: tableName, Key: inboxKey(consumer, key), ConsistentRead: true }),
      );
      if (!Item) return undefined;
      const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
      return {
        status: String(Item.status),
        attempts: Number(Item.attempts ?? 0),
        lastMessageId: text(Item.lastMessageId),
        completedAt: text(Item.completedAt),
        resultRef: text(Item.resultRef),
        failureCode: text(Item.failureCode),
      };
    },
    async quarantined(_key, body) {
      const hash = bodyHash(body);
      const { Item } = await doc.send(
        new GetCommand({ TableName: tableName, Key: quarantineKey(consumer, hash), ConsistentRead: true }),
      );
      return Item ? { id: hash, reasonCode: String(Item.reasonCode) } : undefined;
    },
    async remove({ keys, poison }) {
      const cleanup: { removed: string[]; left: string[]; errors: string[] } = {
        removed: [],
        left: [],
        errors: [],
      };
      const remove = async (what: string, key: { PK: string; SK: string }) => {
        try {
          await doc.send(new DeleteCommand({ TableName: tableName, Key: key }));
          return true;
        } catch (error) {
          cleanup.errors.push(`${what} not deleted: ${(error as Error).name}: ${(error as Error).message}`);
          return false;
        }
      };
      let deleted = 0;
      for (const key of keys) if (await remove(`inbox item ${key}`, inboxKey(consumer, key))) deleted += 1;
      if (keys.length > 0) cleanup.removed.push(`${deleted} inbox item(s)`);
      if (poison) {
        const hash = bodyHash(poison.body);
        if (await remove(`quarantine item ${hash.slice(0, 12)}`, quarantineKey(consumer, hash))) {
          cleanup.removed.push(`quarantine item ${hash.slice(0, 12)}`);
        }
      }
      return cleanup as CanaryCleanup;
    },
  };
}
