import { describe, expect, it } from 'vitest';
import { classifyCancellation } from '../../lambda/stores/dynamodb/classify-cancellation.ts';
import { classifyDynamoError } from '../../lambda/stores/dynamodb/classify-dynamo-error.ts';

// Reasons DynamoDB Local never produces (it does not throttle, and conflicts need concurrent transactions on one
// item at the same instant): the classification of the reasons list is pure, so it is tested on the list itself.
describe('Function: classifyCancellation()', () => {
  const none = { Code: 'None' };

  it('calls a failed inbox condition a lost lease, whatever else failed', () => {
    const cause = classifyCancellation(
      [{ Code: 'ConditionalCheckFailed' }, { Code: 'ConditionalCheckFailed' }],
      1,
    );
    expect(cause).toEqual({ kind: 'leaseLost' });
  });

  it('names the first domain item whose condition failed, with the item it returned', () => {
    const cause = classifyCancellation(
      [none, { Code: 'ConditionalCheckFailed', Item: { PK: { S: 'CASE#1' }, version: { N: '5' } } }, none],
      2,
    );
    expect(cause).toEqual({ kind: 'domainCondition', index: 1, current: { PK: 'CASE#1', version: 5 } });
  });

  it.each([
    ['TransactionConflict', 'TRANSACTION_CONFLICT'],
    ['ThrottlingError', 'THROTTLED'],
    ['ProvisionedThroughputExceeded', 'THROTTLED'],
    ['RequestLimitExceeded', 'THROTTLED'],
    ['ItemCollectionSizeLimitExceeded', 'ITEM_COLLECTION_SIZE_LIMIT'],
  ])('classifies %s as retryable %s', (reason, code) => {
    const cause = classifyCancellation([none, { Code: reason }, none], 2);
    expect(cause).toEqual({
      kind: 'failure',
      failure: {
        retryable: true,
        code,
        message: `DynamoDB cancelled the transaction: ${reason} on item 1`,
        connection: false,
      },
    });
  });

  it('classifies ValidationError as terminal, with DynamoDB message', () => {
    const cause = classifyCancellation(
      [{ Code: 'ValidationError', Message: 'Invalid UpdateExpression' }, none],
      1,
    );
    expect(cause).toMatchObject({
      kind: 'failure',
      failure: { retryable: false, code: 'DYNAMODB_VALIDATION_ERROR' },
    });
    expect(cause.kind === 'failure' && cause.failure.message).toMatch(/write 0 .*Invalid UpdateExpression/);
  });

  it('classifies an unknown or missing reason as retryable TRANSACTION_CANCELLED', () => {
    expect(classifyCancellation([{ Code: 'SomethingNew' }, none], 1)).toMatchObject({
      kind: 'failure',
      failure: {
        retryable: true,
        code: 'TRANSACTION_CANCELLED',
        message: 'DynamoDB cancelled the transaction: SomethingNew on item 0',
      },
    });
    expect(classifyCancellation(undefined, 0)).toMatchObject({
      kind: 'failure',
      failure: { retryable: true, code: 'TRANSACTION_CANCELLED' },
    });
  });
});

describe('Function: classifyDynamoError()', () => {
  it.each([
    [{ name: 'ProvisionedThroughputExceededException' }, 'THROTTLED', true, false],
    [{ name: 'ThrottlingException' }, 'THROTTLED', true, false],
    [
      { name: 'InternalServerError', $fault: 'server', $metadata: { httpStatusCode: 500 } },
      'DYNAMODB_UNAVAILABLE',
      true,
      false,
    ],
    [{ name: 'ResourceNotFoundException' }, 'DYNAMODB_TABLE_NOT_FOUND', true, false],
    [
      { name: 'ValidationException', message: 'Item size has exceeded the maximum allowed size' },
      'DYNAMODB_VALIDATION_ERROR',
      false,
      false,
    ],
    [
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }),
      'DATABASE_UNAVAILABLE',
      true,
      true,
    ],
  ])('classifies %o as %s', (error, code, retryable, connection) => {
    expect(classifyDynamoError(error)).toMatchObject({ code, retryable, connection });
  });
});
