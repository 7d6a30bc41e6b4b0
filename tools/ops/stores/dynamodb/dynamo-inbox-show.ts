import { GetCommand, paginateScan } from '@aws-sdk/lib-dynamodb';
import {
  AUDIT_PK_PREFIX,
  inboxKey,
  QUARANTINE_PK_PREFIX,
  WORKER_SK_PREFIX,
} from '../../../../lambda/stores/dynamodb/item-keys.ts';
import { OperationError } from '../../errors.ts';
import type { OpsOutput } from '../../output.ts';
import { type Cell, emit, recordTable, table } from '../../output.ts';
import { readAttemptHistory, renderAttemptHistory } from '../../render-attempt-history.ts';
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

/** An operator action about the key (an audit item: `dlq redrive`, `quarantine release`, …). */
export interface DynamoAuditSummary {
  readonly auditId: string;
  readonly action: string;
  readonly outcome: string;
  readonly sqsMessageId: string | null;
  readonly newMessageId: string | null;
  readonly actor: string | null;
  readonly at: string;
}

/** Result of {@link dynamoInboxShow}. */
export interface DynamoInboxShowResult {
  readonly consumer: string;
  readonly idempotencyKey: string;
  /** The inbox item without its keys and lease token, or null. */
  readonly inbox: Record<string, unknown> | null;
  readonly quarantine: DynamoQuarantineSummary[];
  /** The operator actions recorded for the key, oldest first. */
  readonly audit: DynamoAuditSummary[];
}

/** Attributes of the inbox item that `inbox show` leaves out: its keys (shown as consumer and key) and the token. */
const HIDDEN = new Set(['PK', 'SK', 'leaseToken']);

/**
 * `inbox show <key>` on the DynamoDB store: the inbox item of one idempotency key (status, attempts, lease, failure,
 * TTL, the worker version that first saw it), its attempt history (`attemptHistory`, oldest first), its quarantine items and the operator actions recorded for it (audit items), as on PostgreSQL. The inbox
 * item is one consistent GetItem; the quarantine items (keyed by body hash) and the audit items (keyed by a UUID) are
 * found with one scan filtered on the key.
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
  const { quarantine, audit } = await itemsAboutKey(dynamo, consumer, idempotencyKey);
  if (!Item && quarantine.length === 0) {
    throw new OperationError(
      `No inbox item or quarantine item for idempotency key "${idempotencyKey}" of consumer "${consumer}" in table ${dynamo.tableName}. ` +
        'Check the key (it is the envelope idempotencyKey, not the SQS message id), --consumer / WORKER_CONSUMER and --dynamodb-table / DYNAMODB_TABLE.',
    );
  }
  const inbox = Item ? Object.fromEntries(Object.entries(Item).filter(([name]) => !HIDDEN.has(name))) : null;
  const result: DynamoInboxShowResult = { consumer, idempotencyKey, inbox, quarantine, audit };
  emit(out, result, () => renderInboxShow(result));
  return result;
}

/** The quarantine and audit items of a key of a consumer: one consistent scan, filtered on the key. */
async function itemsAboutKey(
  dynamo: DynamoOpsTarget,
  consumer: string,
  idempotencyKey: string,
): Promise<{ quarantine: DynamoQuarantineSummary[]; audit: DynamoAuditSummary[] }> {
  const quarantine: DynamoQuarantineSummary[] = [];
  const audit: DynamoAuditSummary[] = [];
  const pages = paginateScan(
    { client: dynamo.doc },
    {
      TableName: dynamo.tableName,
      ConsistentRead: true,
      FilterExpression: '(begins_with(PK, :q) OR begins_with(PK, :a)) AND SK = :sk AND idempotencyKey = :key',
      ExpressionAttributeValues: {
        ':q': QUARANTINE_PK_PREFIX,
        ':a': AUDIT_PK_PREFIX,
        ':sk': `${WORKER_SK_PREFIX}${consumer}`,
        ':key': idempotencyKey,
      },
    },
  );
  const text = (value: unknown) => (typeof value === 'string' ? value : null);
  for await (const page of pages) {
    for (const item of page.Items ?? []) {
      if (String(item.PK).startsWith(AUDIT_PK_PREFIX)) {
        audit.push({
          auditId: String(item.PK).slice(AUDIT_PK_PREFIX.length),
          action: String(item.action),
          outcome: String(item.outcome),
          sqsMessageId: text(item.sqsMessageId),
          newMessageId: text(item.newMessageId),
          actor: text(item.actor),
          at: String(item.at),
        });
        continue;
      }
      quarantine.push({
        bodyHash: String(item.bodyHash),
        reasonCode: String(item.reasonCode),
        reasonMessage: String(item.reasonMessage),
        occurrences: Number(item.occurrences),
        firstQuarantinedAt: String(item.firstQuarantinedAt),
        lastQuarantinedAt: String(item.lastQuarantinedAt),
        releasedAt: text(item.releasedAt),
      });
    }
  }
  audit.sort((a, b) => a.at.localeCompare(b.at) || a.auditId.localeCompare(b.auditId));
  return { quarantine, audit };
}

/** The text form: the inbox item as a record, then its quarantine items and operator actions as tables. */
function renderInboxShow(result: DynamoInboxShowResult): string {
  const { consumer, idempotencyKey, inbox, quarantine, audit } = result;
  const parts: string[] = [];
  if (inbox) {
    const { attemptHistory, ...fields } = inbox;
    parts.push(
      recordTable({ consumer, idempotencyKey, ...(fields as Record<string, Cell>) }),
      renderAttemptHistory(readAttemptHistory(attemptHistory)),
    );
  } else parts.push(`No inbox item for "${idempotencyKey}" (consumer ${consumer}).`);
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
  if (audit.length > 0) {
    parts.push(
      'Operator actions:',
      table(
        ['audit id', 'action', 'outcome', 'message', 'new message', 'actor', 'at'],
        audit.map((a) => [a.auditId, a.action, a.outcome, a.sqsMessageId, a.newMessageId, a.actor, a.at]),
      ),
    );
  }
  return parts.join('\n');
}
