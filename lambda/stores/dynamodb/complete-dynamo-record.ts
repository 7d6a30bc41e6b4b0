import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { RetryableError } from '../../errors.ts';
import type { StoreCalls } from '../../worker/record-store.ts';
import { commitDynamoTransaction } from './commit-dynamo-transaction.ts';
import { documentClient } from './document-client.ts';
import type { DynamoHandlerResult } from './dynamo-handler.ts';
import type { DynamoStore } from './dynamo-store.ts';
import { DynamoCancellationError, LeaseLostError } from './errors.ts';
import { completeInboxUpdate, type LeaseAttempt } from './inbox-updates.ts';

/**
 * Completes a claimed record on the DynamoDB store: its domain writes and the inbox item's completion under the
 * lease in ONE TransactWriteItems. When a domain item's condition failed, the handler's rule for that write decides:
 * stale or already applied, the inbox item is completed alone, under the lease; an `Error`, the record fails with it.
 * `stale` when the message was older than the state.
 *
 * @throws LeaseLostError when the lease was taken over (nothing was applied), `DynamoCancellationError` for another
 *   cancellation reason, the rule's error, or the client's.
 *
 * @internal
 */
export async function completeDynamoRecord(
  store: DynamoStore,
  calls: StoreCalls,
  input: {
    consumer: string;
    idempotencyKey: string;
    leaseToken: string;
    result: DynamoHandlerResult | undefined;
    nowMs: number;
    /** The attempt the lease is for, added to the item's history by the completion. */
    attempt?: LeaseAttempt;
  },
): Promise<{ stale: boolean }> {
  const { result, consumer, idempotencyKey, leaseToken, nowMs, attempt } = input;
  const writes = result?.writes ?? [];
  const resultRef = result?.resultRef;
  const completion = completeInboxUpdate(store, {
    consumer,
    idempotencyKey,
    leaseToken,
    resultRef,
    nowMs,
    ...(attempt ? { attempt } : {}),
  });
  const commit = await calls.timed((signal) => commitDynamoTransaction(store, writes, completion, signal));
  if (commit.kind === 'committed') return { stale: result?.stale === true };
  const { cause } = commit;
  if (cause.kind === 'leaseLost') throw new LeaseLostError();
  if (cause.kind === 'failure') throw new DynamoCancellationError(cause.failure);

  const rule = writes[cause.index]?.onConditionFailed;
  const ruling = rule
    ? rule(cause.current)
    : new RetryableError(
        'DOMAIN_CONDITION_FAILED',
        `the condition of domain write ${cause.index} failed and the handler gives no rule for it (onConditionFailed)`,
      );
  if (ruling instanceof Error) throw ruling;
  try {
    await calls.timed((signal) =>
      documentClient(store).send(new UpdateCommand(completion), { abortSignal: signal }),
    );
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) throw new LeaseLostError({ cause: error });
    throw error;
  }
  return { stale: ruling === 'stale' };
}
