import { TerminalError } from '../../errors.ts';

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
