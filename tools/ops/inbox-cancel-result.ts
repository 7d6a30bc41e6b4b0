import { OperationError } from './errors.ts';

/** What `inbox cancel` reports, on either store. */
export interface InboxCancelResult {
  readonly consumer: string;
  readonly idempotencyKey: string;
  /** The key's inbox status before the cancel; null when the key had no inbox entry (a marker was created). */
  readonly inboxStatusBefore: string | null;
  /** True when the key was cancelled already (nothing changed but the audit). */
  readonly alreadyCancelled: boolean;
  readonly reason: string | null;
  readonly actor: string;
  readonly cancelledAt: string;
  readonly auditId: string;
}

/**
 * The refusal of a cancel whose key is COMPLETED (found so, or completed by a copy in flight while the cancel ran): its
 * effect exists, so a cancel cannot undo it.
 *
 * @internal
 */
export function completedKeyRefusal(
  key: string,
  storeFlag: string,
  whileCancelling: boolean,
): OperationError {
  const when = whileCancelling
    ? 'a copy in flight completed it while the cancel ran (it committed before the cancel was visible to it)'
    : 'it is COMPLETED';
  return new OperationError(
    `Idempotency key "${key}" was not cancelled: ${when}, so its effect exists and cancelling cannot undo it. ` +
      'Undo the effect with a compensating message of your domain, or quarantine what follows; see ' +
      `"sqs-worker inbox show ${key}${storeFlag}" and docs/operations.md "Cancel a key".`,
  );
}

/**
 * The text of an `inbox cancel` result.
 *
 * @internal
 */
export function renderInboxCancel(result: InboxCancelResult, storeFlag: string): string {
  const key = result.idempotencyKey;
  const before = result.inboxStatusBefore;
  return [
    result.alreadyCancelled
      ? `Idempotency key "${key}" of consumer ${result.consumer} was cancelled already; nothing changed.`
      : `Cancelled idempotency key "${key}" of consumer ${result.consumer} (${before ? `was ${before}` : 'no inbox entry yet: a marker was created'}).`,
    'Any copy of it in flight or arriving later is quarantined with reason CANCELLED and never applied.',
    `Audit ${result.auditId}; check with "sqs-worker inbox show ${key}${storeFlag}".`,
  ].join('\n');
}
