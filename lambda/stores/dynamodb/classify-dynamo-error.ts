import { classifyError, type Failure, NETWORK_ERROR_CODES, truncate } from '../../worker/classify-error.ts';

/** Error names of the DynamoDB API that clear on their own. */
const THROTTLING = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'LimitExceededException',
]);

interface SdkLikeError {
  name?: string;
  code?: string;
  message?: string;
  $fault?: 'client' | 'server';
  $metadata?: { httpStatusCode?: number };
}

/**
 * Classifies an error of a DynamoDB call outside a cancelled transaction (DESIGN.md rule 4, the DynamoDB side):
 * throttling and 5xx → retryable; the endpoint unreachable (network error, a request that timed out) → retryable and
 * connection-class (the rest of the batch is reported without calling DynamoDB); a missing table → retryable, naming
 * `DYNAMODB_TABLE`; `ValidationException` (a request that can never succeed as it is) → terminal; anything else →
 * `classifyError` (a handler's `RetryableError` / `TerminalError` keep their code).
 *
 * @internal
 */
export function classifyDynamoError(error: unknown): Failure {
  const e = (typeof error === 'object' && error !== null ? error : {}) as SdkLikeError;
  const name = e.name ?? '';
  if (THROTTLING.has(name)) {
    return {
      retryable: true,
      code: 'THROTTLED',
      message: `DynamoDB throttled the request (${name})`,
      connection: false,
    };
  }
  if (name === 'ResourceNotFoundException') {
    return {
      retryable: true,
      code: 'DYNAMODB_TABLE_NOT_FOUND',
      message:
        'the DynamoDB table does not exist in this account and region; check DYNAMODB_TABLE and the stack that creates it',
      connection: false,
    };
  }
  if (name === 'ValidationException') {
    return {
      retryable: false,
      code: 'DYNAMODB_VALIDATION_ERROR',
      message: truncate(`DynamoDB refused the request: ${e.message ?? name}; fix the handler's write`),
      connection: false,
    };
  }
  if (name === 'TransactionInProgressException' || name === 'TransactionConflictException') {
    return { retryable: true, code: 'TRANSACTION_CONFLICT', message: `DynamoDB: ${name}`, connection: false };
  }
  if (e.$fault === 'server' || (e.$metadata?.httpStatusCode ?? 0) >= 500) {
    return {
      retryable: true,
      code: 'DYNAMODB_UNAVAILABLE',
      message: `DynamoDB answered ${e.$metadata?.httpStatusCode ?? 'a server error'} (${name || 'unknown'})`,
      connection: false,
    };
  }
  if ((e.code && NETWORK_ERROR_CODES.has(e.code)) || name === 'TimeoutError') {
    return {
      retryable: true,
      code: 'DATABASE_UNAVAILABLE',
      message: `DynamoDB could not be reached: ${e.code ?? name}`,
      connection: true,
    };
  }
  return classifyError(error);
}
