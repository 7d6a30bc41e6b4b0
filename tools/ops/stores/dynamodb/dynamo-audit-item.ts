import { randomUUID } from 'node:crypto';
import { AUDIT_PK_PREFIX, WORKER_SK_PREFIX } from '../../../../lambda/stores/dynamodb/item-keys.ts';
import type { AuditEntry } from '../../ops-store.ts';

/**
 * The DynamoDB store's `ops_audit` row: an item `PK = AUDIT#<auditId>`, `SK = WORKER#<consumer>` (no `ttl`: kept),
 * with the entry's fields, `actor` and `at`; absent fields are left out. Written by an ops command in the same
 * transaction as the change it records. Returns the item and its id (a UUID).
 *
 * @internal
 */
export function dynamoAuditItem(
  entry: AuditEntry & { readonly consumer: string },
  actor: string,
  at: Date,
): { auditId: string; item: Record<string, unknown> } {
  const auditId = randomUUID();
  const fields = Object.entries({ ...entry, detail: entry.detail ?? {} }).filter(
    ([, value]) => value !== undefined,
  );
  return {
    auditId,
    item: {
      PK: `${AUDIT_PK_PREFIX}${auditId}`,
      SK: `${WORKER_SK_PREFIX}${entry.consumer}`,
      ...Object.fromEntries(fields),
      actor,
      at: at.toISOString(),
    },
  };
}
