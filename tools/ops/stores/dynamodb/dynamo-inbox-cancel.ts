import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { inboxKey } from '../../../../lambda/stores/dynamodb/item-keys.ts';
import type { Clock } from '../../clock.ts';
import { systemClock } from '../../clock.ts';
import { currentActor } from '../../current-actor.ts';
import { OperationError } from '../../errors.ts';
import { completedKeyRefusal, type InboxCancelResult, renderInboxCancel } from '../../inbox-cancel-result.ts';
import { emit, type OpsOutput } from '../../output.ts';
import { dynamoAuditItem } from './dynamo-audit-item.ts';
import type { DynamoOpsTarget } from './dynamo-ops-table.ts';

const STORE_FLAG = ' --store dynamodb';

/** Reads of the item that changed under the cancel before it gives up (each one a copy's write in between). */
const ATTEMPTS = 3;

/**
 * `inbox cancel <key>` on the DynamoDB store: ONE TransactWriteItems sets the inbox item CANCELLED (`cancelledBy`,
 * `cancelledAt`, `cancelReason`, failure code CANCELLED, its `ttl` removed: kept) — creating the item when the key
 * has none — with the audit item. Conditioned on the status just read (none, or that status), never COMPLETED.
 *
 * Atomic against a copy in flight: that copy holds the item PROCESSING under its lease, and every write it makes is
 * conditioned on `status = PROCESSING` and its token, so once the item is CANCELLED its TransactWriteItems (domain
 * writes and completion) is cancelled whole — nothing applied — and the copy is quarantined with reason CANCELLED. The
 * gate's conditional put refuses the key to any later copy (`attribute_not_exists`), which is quarantined too. If the
 * copy committed first, the item is COMPLETED and the cancel is refused.
 *
 * @throws OperationError (exit 1) when the key is COMPLETED, or kept changing under the cancel.
 */
export async function dynamoInboxCancel(
  deps: { dynamo: DynamoOpsTarget; out: OpsOutput; clock?: Clock },
  options: { consumer: string; idempotencyKey: string; reason?: string | undefined; actor?: string },
): Promise<InboxCancelResult> {
  const { dynamo, out } = deps;
  const clock = deps.clock ?? systemClock;
  const { consumer, idempotencyKey } = options;
  const actor = options.actor ?? currentActor();
  const reason = options.reason ?? null;
  const key = inboxKey(consumer, idempotencyKey);
  for (let attempt = 1; attempt <= ATTEMPTS; attempt += 1) {
    const { Item } = await dynamo.doc.send(
      new GetCommand({ TableName: dynamo.tableName, Key: key, ConsistentRead: true }),
    );
    const before = Item ? String(Item.status) : null;
    if (before === 'COMPLETED') throw completedKeyRefusal(idempotencyKey, STORE_FLAG, attempt > 1);
    const at = clock.now();
    const audit = dynamoAuditItem(
      {
        action: 'inbox_cancel',
        outcome: 'DONE',
        consumer,
        idempotencyKey,
        detail: {
          inboxStatusBefore: before,
          alreadyCancelled: before === 'CANCELLED',
          ...(reason ? { reason } : {}),
        },
      },
      actor,
      at,
    );
    try {
      await dynamo.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            { Update: cancelUpdate(dynamo, key, { before, actor, at, reason }) },
            {
              Put: {
                TableName: dynamo.tableName,
                Item: audit.item,
                ConditionExpression: 'attribute_not_exists(PK)',
              },
            },
          ],
        }),
      );
    } catch (error) {
      const changed =
        error instanceof TransactionCanceledException &&
        error.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed';
      if (changed) continue; // a copy wrote the item since it was read: read it again
      throw error;
    }
    const result: InboxCancelResult = {
      consumer,
      idempotencyKey,
      inboxStatusBefore: before,
      alreadyCancelled: before === 'CANCELLED',
      reason,
      actor,
      cancelledAt: at.toISOString(),
      auditId: audit.auditId,
    };
    emit(out, result, () => renderInboxCancel(result, STORE_FLAG));
    return result;
  }
  throw new OperationError(
    `Idempotency key "${idempotencyKey}" was not cancelled: its inbox item changed ${ATTEMPTS} times while the cancel ` +
      `ran (copies of it are being processed right now). Run the cancel again; check "sqs-worker inbox show ` +
      `${idempotencyKey}${STORE_FLAG}".`,
  );
}

/** The inbox item's update to CANCELLED, conditioned on the status read (`before`; null: no item). */
function cancelUpdate(
  dynamo: DynamoOpsTarget,
  key: { PK: string; SK: string },
  input: { before: string | null; actor: string; at: Date; reason: string | null },
) {
  return {
    TableName: dynamo.tableName,
    Key: key,
    UpdateExpression:
      'SET #status = :cancelled, cancelledBy = :actor, cancelledAt = :at, failureCode = :cancelled, ' +
      'failureMessage = :message, failedAt = :at, attempts = if_not_exists(attempts, :zero)' +
      (input.reason ? ', cancelReason = :reason' : '') +
      ' REMOVE #ttl',
    ConditionExpression: input.before === null ? 'attribute_not_exists(PK)' : '#status = :before',
    ExpressionAttributeNames: { '#status': 'status', '#ttl': 'ttl' },
    ExpressionAttributeValues: {
      ':cancelled': 'CANCELLED',
      ':actor': input.actor,
      ':at': input.at.toISOString(),
      ':message': 'cancelled by an operator (sqs-worker inbox cancel)',
      ':zero': 0,
      ...(input.reason ? { ':reason': input.reason } : {}),
      ...(input.before === null ? {} : { ':before': input.before }),
    },
  };
}
