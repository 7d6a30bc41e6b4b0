import { RetryableError, TerminalError, WorkerError } from '../../errors.ts';
import type { Failure } from '../../worker/classify-error.ts';

/**
 * Thrown when a DynamoDB handler returns more domain writes than one TransactWriteItems can carry with the inbox
 * item (99). Terminal: the same message returns the same writes.
 */
export class DynamoTransactionTooLargeError extends TerminalError {
  /** Domain writes the handler returned. */
  readonly writes: number;
  constructor(writes: number, max: number) {
    super(
      'DYNAMODB_TOO_MANY_WRITES',
      `the handler returned ${writes} domain writes; one TransactWriteItems holds 100 items, one of them the inbox item, so at most ${max}. Split the work into several messages (one per group of items)`,
    );
    this.name = 'DynamoTransactionTooLargeError';
    this.writes = writes;
  }
}

/**
 * Thrown when the inbox lease of this delivery was taken over by another delivery before this one committed (the
 * inbox item's condition failed): nothing was applied, and the new holder writes the key. Retryable `LEASE_LOST`.
 */
export class LeaseLostError extends RetryableError {
  constructor(options?: { cause?: unknown }) {
    super(
      'LEASE_LOST',
      'the inbox lease of this key was taken over by another delivery before this one committed; nothing was applied',
      options,
    );
    this.name = 'LeaseLostError';
  }
}

/**
 * Thrown when a record's TransactWriteItems was cancelled for a reason DynamoDB gave (`classifyCancellation`):
 * carries the failure that reason was classified as.
 */
export class DynamoCancellationError extends WorkerError {
  /** The cancellation, classified. */
  readonly failure: Failure;
  constructor(failure: Failure) {
    super(`the transaction was cancelled: ${failure.code}`);
    this.name = 'DynamoCancellationError';
    this.failure = failure;
  }
}
