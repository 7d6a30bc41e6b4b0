import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { type CancellationCause, classifyCancellation } from './classify-cancellation.ts';
import { documentClient } from './document-client.ts';
import type { DynamoTransactItem, DynamoWrite } from './dynamo-handler.ts';
import { MAX_DOMAIN_WRITES } from './dynamo-handler.ts';
import type { DynamoStore } from './dynamo-store.ts';
import { DynamoTransactionTooLargeError } from './errors.ts';
import type { InboxUpdate } from './inbox-updates.ts';

/**
 * How a record's transaction ended: committed, or cancelled with its classified cause.
 *
 * @internal
 */
export type DynamoCommit =
  | { readonly kind: 'committed' }
  | { readonly kind: 'cancelled'; readonly cause: CancellationCause };

/** The transaction entry of a domain write: the rule taken off, `ALL_OLD` asked for so a rule sees the item. */
function transactItem(write: DynamoWrite): DynamoTransactItem {
  const { onConditionFailed: _rule, ...item } = write;
  for (const kind of ['Put', 'Update', 'Delete', 'ConditionCheck'] as const) {
    const operation = item[kind] as
      | { ConditionExpression?: string; ReturnValuesOnConditionCheckFailure?: string }
      | undefined;
    if (operation?.ConditionExpression && !operation.ReturnValuesOnConditionCheckFailure) {
      return {
        ...item,
        [kind]: { ...operation, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' },
      } as DynamoTransactItem;
    }
  }
  return item as DynamoTransactItem;
}

/**
 * Commits a record: its domain writes and the inbox item's completion (or failure) in ONE TransactWriteItems, the
 * inbox item last. Either every item is written or none is; a cancelled transaction is classified by its
 * `CancellationReasons` (see `classifyCancellation`). Other errors are thrown.
 *
 * @throws DynamoTransactionTooLargeError for more than {@link MAX_DOMAIN_WRITES} domain writes.
 *
 * @internal
 */
export async function commitDynamoTransaction(
  store: DynamoStore,
  writes: readonly DynamoWrite[],
  inbox: InboxUpdate,
  abortSignal?: AbortSignal,
): Promise<DynamoCommit> {
  if (writes.length > MAX_DOMAIN_WRITES)
    throw new DynamoTransactionTooLargeError(writes.length, MAX_DOMAIN_WRITES);
  const items: DynamoTransactItem[] = [
    ...writes.map(transactItem),
    { Update: { ...inbox, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } },
  ];
  try {
    await documentClient(store).send(new TransactWriteCommand({ TransactItems: items }), { abortSignal });
    return { kind: 'committed' };
  } catch (error) {
    if (error instanceof TransactionCanceledException) {
      return { kind: 'cancelled', cause: classifyCancellation(error.CancellationReasons, items.length - 1) };
    }
    throw error;
  }
}
