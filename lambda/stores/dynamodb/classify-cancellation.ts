import type { CancellationReason } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Failure } from '../../worker/classify-error.ts';

/**
 * Why a TransactWriteItems was cancelled, read from its `CancellationReasons` (one per item, in order).
 *
 * @internal
 */
export type CancellationCause =
  /** The inbox item's condition failed: another delivery took the lease over (or completed the key). */
  | { readonly kind: 'leaseLost' }
  /** A domain item's condition failed: the handler's rule for that write decides (`current`: the item now). */
  | {
      readonly kind: 'domainCondition';
      readonly index: number;
      readonly current: Record<string, unknown> | undefined;
    }
  /** Anything else, classified. */
  | { readonly kind: 'failure'; readonly failure: Failure };

/** Cancellation codes that clear on their own (DynamoDB's TransactWriteItems reference). */
const RETRYABLE_REASONS: Record<string, string> = {
  TransactionConflict: 'TRANSACTION_CONFLICT',
  ThrottlingError: 'THROTTLED',
  ProvisionedThroughputExceeded: 'THROTTLED',
  RequestLimitExceeded: 'THROTTLED',
  ItemCollectionSizeLimitExceeded: 'ITEM_COLLECTION_SIZE_LIMIT',
};

/** The failure of a copy whose key an operator cancelled while it held the lease (`sqs-worker inbox cancel`). */
const CANCELLED: Failure = {
  retryable: false,
  code: 'CANCELLED',
  message:
    'an operator cancelled this idempotency key while this copy was in flight (sqs-worker inbox cancel); its transaction was cancelled, nothing was applied',
  connection: false,
};

/** An item as a cancellation reason returns it (AttributeValues), in native values. */
function nativeItem(item: CancellationReason['Item']): Record<string, unknown> | undefined {
  if (!item) return undefined;
  try {
    return unmarshall(item);
  } catch {
    return item as Record<string, unknown>;
  }
}

/**
 * Classifies a cancelled transaction by its reasons. The inbox item's failed condition wins (the lease is lost:
 * whatever else failed, this delivery no longer owns the key; terminal `CANCELLED` when the item returned is CANCELLED); then the first domain item whose condition failed;
 * then conflicts and throttling (retryable); `ValidationError` (a write that can never succeed as it is) is
 * terminal; any other code is retryable, named.
 *
 * @param inboxIndex position of the inbox item in the transaction.
 *
 * @internal
 */
export function classifyCancellation(
  reasons: readonly CancellationReason[] | undefined,
  inboxIndex: number,
): CancellationCause {
  const list = reasons ?? [];
  if (list[inboxIndex]?.Code === 'ConditionalCheckFailed') {
    // An operator cancelled the key while this copy held its lease: terminal, nothing of it was applied.
    if (nativeItem(list[inboxIndex]?.Item)?.status === 'CANCELLED')
      return { kind: 'failure', failure: CANCELLED };
    return { kind: 'leaseLost' };
  }
  const domain = list.findIndex((reason, i) => i !== inboxIndex && reason.Code === 'ConditionalCheckFailed');
  if (domain !== -1) {
    return { kind: 'domainCondition', index: domain, current: nativeItem(list[domain]?.Item) };
  }
  const codes = list.map((reason) => reason.Code).filter((code): code is string => !!code && code !== 'None');
  const at = (code: string) => list.findIndex((reason) => reason.Code === code);
  const retryable = codes.find((code) => code in RETRYABLE_REASONS);
  if (retryable) {
    return {
      kind: 'failure',
      failure: {
        retryable: true,
        code: RETRYABLE_REASONS[retryable] as string,
        message: `DynamoDB cancelled the transaction: ${retryable} on item ${at(retryable)}`,
        connection: false,
      },
    };
  }
  if (codes.includes('ValidationError')) {
    // DynamoDB's message names the expression or attribute, never an attribute value.
    const reason = list[at('ValidationError')];
    return {
      kind: 'failure',
      failure: {
        retryable: false,
        code: 'DYNAMODB_VALIDATION_ERROR',
        message: `DynamoDB refused write ${at('ValidationError')} of the transaction: ${reason?.Message ?? 'ValidationError'}; fix the handler's write`,
        connection: false,
      },
    };
  }
  const code = codes[0] ?? 'Unknown';
  return {
    kind: 'failure',
    failure: {
      retryable: true,
      code: 'TRANSACTION_CANCELLED',
      message: `DynamoDB cancelled the transaction: ${code}${codes.length > 0 ? ` on item ${at(code)}` : ' (no reason given)'}`,
      connection: false,
    },
  };
}
