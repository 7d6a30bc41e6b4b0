import { GetCommand, paginateScan } from '@aws-sdk/lib-dynamodb';
import {
  inboxKey,
  QUARANTINE_PK_PREFIX,
  WORKER_SK_PREFIX,
} from '../../../../lambda/stores/dynamodb/item-keys.ts';
import { OperationError } from '../../errors.ts';
import type { OpsOutput } from '../../output.ts';
import { type Cell, emit, recordTable, table } from '../../output.ts';
import type { DynamoOpsTarget } from './dynamo-ops-table.ts';

/** A quarantine item as `inbox show` lists it (no body). */
export interface DynamoQuarantineSummary {
  readonly bodyHash: string;
  readonly reasonCode: string;
  readonly reasonMessage: string;
  readonly occurrences: number;
  readonly firstQuarantinedAt: string;
  readonly lastQuarantinedAt: string;
  readonly releasedAt: string | null;
}

/** Result of {@link dynamoInboxShow}. */
export interface DynamoInboxShowResult {
  readonly consumer: string;
  readonly idempotencyKey: string;
  /** The inbox item without its keys and lease token, or null. */
  readonly inbox: Record<string, unknown> | null;
  readonly quarantine: DynamoQuarantineSummary[];
}

/** Attributes of the inbox item that `inbox show` leaves out: its keys (shown as consumer and key) and the token. */
const HIDDEN = new Set(['PK', 'SK', 'leaseToken']);

/**
 * `inbox show <key>` on the DynamoDB store: the inbox item of one idempotency key (status, attempts, lease, failure,
 * TTL) and its quarantine items. The inbox item is one consistent GetItem; the quarantine items (keyed by body hash)
 * are found with a scan filtered on the key.
 *
 * @throws OperationError (exit 1) when the key has neither an inbox item nor a quarantine item.
 */
export async function dynamoInboxShow(
  deps: { dynamo: DynamoOpsTarget; out: OpsOutput },
  options: { consumer: string; idempotencyKey: string },
): Promise<DynamoInboxShowResult> {
  const { dynamo, out } = deps;
  const { consumer, idempotencyKey } = options;
  const { Item } = await dynamo.doc.send(
    new GetCommand({
      TableName: dynamo.tableName,
      Key: inboxKey(consumer, idempotencyKey),
      ConsistentRead: true,
    }),
  );
  const quarantine: DynamoQuarantineSummary[] = [];
  const pages = paginateScan(
    { client: dynamo.doc },
    {
      TableName: dynamo.tableName,
      ConsistentRead: true,
      FilterExpression: 'begins_with(PK, :q) AND SK = :sk AND idempotencyKey = :key',
      ExpressionAttributeValues: {
        ':q': QUARANTINE_PK_PREFIX,
        ':sk': `${WORKER_SK_PREFIX}${consumer}`,
        ':key': idempotencyKey,
      },
    },
  );
  for await (const page of pages) {
    for (const item of page.Items ?? []) {
      quarantine.push({
        bodyHash: String(item.bodyHash),
        reasonCode: String(item.reasonCode),
        reasonMessage: String(item.reasonMessage),
        occurrences: Number(item.occurrences),
        firstQuarantinedAt: String(item.firstQuarantinedAt),
        lastQuarantinedAt: String(item.lastQuarantinedAt),
        releasedAt: typeof item.releasedAt === 'string' ? item.releasedAt : null,
      });
    }
  }
  if (!Item && quarantine.length === 0) {
    throw new OperationError(
      `No inbox item or quarantine item for idempotency key "${idempotencyKey}" of consumer "${consumer}" in table ${dynamo.tableName}. ` +
        'Check the key (it is the envelope idempotencyKey, not the SQS message id), --consumer / WORKER_CONSUMER and --dynamodb-table / DYNAMODB_TABLE.',
    );
  }
  const inbox = Item ? Object.fromEntries(Object.entries(Item).filter(([name]) => !HIDDEN.has(name))) : null;
  const result: DynamoInboxShowResult = { consumer, idempotencyKey, inbox, quarantine };
  emit(out, result, () => {
    const parts = [
      inbox
        ? recordTable({ consumer, idempotencyKey, ...(inbox as Record<string, Cell>) })
        : `No inbox item for "${idempotencyKey}" (consumer ${consumer}).`,
    ];
    if (quarantine.length > 0) {
      parts.push(
        'Quarantine:',
        table(
          ['body hash', 'reason', 'occurrences', 'last quarantined', 'released at'],
          quarantine.map((q) => [
            q.bodyHash.slice(0, 12),
            q.reasonCode,
            q.occurrences,
            q.lastQuarantinedAt,
            q.releasedAt,
          ]),
        ),
      );
    }
    return parts.join('\n');
  });
  return result;
}
