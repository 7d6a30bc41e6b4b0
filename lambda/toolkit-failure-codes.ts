/**
 * The failure codes the toolkit itself emits (the engine, both stores, the effect log, the canary), without the example
 * domain's: a leaf module (constants only), so a worker that reads them (the retry policy's check) bundles no
 * example-domain module. lambda/failure-codes.ts adds the example domain's and lists them all.
 */

/** Codes of the engine (lambda/worker/) and of the errors it raises (lambda/errors.ts). */
export const ENGINE_FAILURE_CODES = [
  // Decoding: terminal, quarantined with the raw body.
  'INVALID_JSON',
  'INVALID_ENVELOPE',
  'INVALID_PAYLOAD',
  'UNKNOWN_MESSAGE_TYPE',
  'UNSUPPORTED_SCHEMA_VERSION',
  'PAYLOAD_TOO_DEEP',
  'DECODE_FAILED',
  // The inbox.
  'IDEMPOTENCY_HASH_MISMATCH',
  'IN_PROGRESS_ELSEWHERE',
  'PREVIOUSLY_TERMINAL',
  // An operator cancelled the key (sqs-worker inbox cancel): terminal, never applied.
  'CANCELLED',
  'NOT_YET_DUE',
  'DEADLINE_DEFERRED',
  'FIFO_GROUP_BLOCKED',
  'BATCH_COMMIT_FAILED',
  // The handler's budget and its transaction handle.
  'HANDLER_TIMEOUT',
  'TRANSACTION_CLOSED',
  'RECORD_UNSETTLED',
  // PostgreSQL (classified by SQLSTATE class; other SQLSTATEs are `POSTGRES_<sqlstate>`).
  'SERIALIZATION_FAILURE',
  'DEADLOCK_DETECTED',
  'LOCK_TIMEOUT',
  'QUERY_CANCELED',
  'DATA_EXCEPTION',
  'CONSTRAINT_VIOLATION',
  'DATABASE_TIMEOUT',
  // The connection.
  'DATABASE_UNAVAILABLE',
  'TOO_MANY_CONNECTIONS',
  'ADMIN_SHUTDOWN',
  'CRASH_SHUTDOWN',
  'CANNOT_CONNECT_NOW',
  'CONNECTION_EXCEPTION',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'NETWORK_ERROR',
  // Anything else: retryable, bounded by the attempt policy.
  'UNHANDLED_ERROR',
  // A payload by reference (payloadRef), read from S3 before the transaction.
  'PAYLOAD_NOT_FOUND',
  'PAYLOAD_CHECKSUM_MISMATCH',
  'PAYLOAD_TOO_LARGE',
  'PAYLOAD_ACCESS_DENIED',
  'PAYLOAD_S3_THROTTLED',
  'PAYLOAD_READ_FAILED',
  'PAYLOAD_READ_TIMEOUT',
  'PAYLOAD_READER_MISSING',
  'PAYLOAD_NOT_READ',
] as const;

/** Codes of the external-effect log (`performExternalEffect`) and the HTTP notification provider. */
export const EFFECT_FAILURE_CODES = [
  'EFFECT_INVALID',
  'EFFECT_HASH_MISMATCH',
  'EFFECT_FAILED_TERMINAL',
  'EFFECT_OUTCOME_UNKNOWN',
  'EFFECT_LOG_IN_TRANSACTION',
  'EFFECT_LOG_RACE',
  'EFFECT_BAD_REFERENCE',
  'EFFECT_REJECTED',
  'EFFECT_PROVIDER_UNAVAILABLE',
] as const;

/** Codes of the DynamoDB store (lambda/stores/dynamodb/), explained in docs/dynamodb.md. */
export const DYNAMODB_FAILURE_CODES = [
  // The inbox lease and a domain item's condition inside the transaction.
  'LEASE_LOST',
  'DOMAIN_CONDITION_FAILED',
  // A cancelled transaction, by its reasons, and the calls outside one.
  'TRANSACTION_CONFLICT',
  'TRANSACTION_CANCELLED',
  'THROTTLED',
  'ITEM_COLLECTION_SIZE_LIMIT',
  'DYNAMODB_VALIDATION_ERROR',
  'DYNAMODB_UNAVAILABLE',
  'DYNAMODB_TABLE_NOT_FOUND',
  // More domain writes than one TransactWriteItems holds.
  'DYNAMODB_TOO_MANY_WRITES',
  // An outbox item whose key names another event (dynamoOutboxWrite in a handler's writes).
  'OUTBOX_CONFLICT',
] as const;

/** Codes of the toolkit's canary handler (lambda/canary/), on purpose: `sqs-worker smoke` sends them. */
export const CANARY_FAILURE_CODES = ['CANARY_POISON', 'CANARY_RETRYABLE'] as const;

/**
 * The toolkit's own codes: every code listed above; not the example domain's (whose handlers are a worker's own, as
 * yours are). A worker's bundle that reads these carries no example-domain module.
 */
export const TOOLKIT_FAILURE_CODES = [
  ...ENGINE_FAILURE_CODES,
  ...EFFECT_FAILURE_CODES,
  ...DYNAMODB_FAILURE_CODES,
  ...CANARY_FAILURE_CODES,
] as const;
