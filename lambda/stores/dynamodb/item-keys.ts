/**
 * Keys and attribute names of the DynamoDB store's items (a leaf module: no logic beyond building keys). One table
 * holds the inbox items, the quarantine items and, in the examples, the domain items (docs/dynamodb.md).
 */

/** Prefix of an inbox item's partition key: `IDEMP#<idempotencyKey>`. */
export const INBOX_PK_PREFIX = 'IDEMP#';
/** Prefix of an inbox or quarantine item's sort key: `WORKER#<consumer>`. */
export const WORKER_SK_PREFIX = 'WORKER#';
/** Prefix of a quarantine item's partition key: `QUARANTINE#<sha256 of the body>`. */
export const QUARANTINE_PK_PREFIX = 'QUARANTINE#';
/**
 * Prefix of an operator audit item's partition key: `AUDIT#<auditId>`, written by the ops commands (never the worker),
 * here with the other prefixes the toolkit reserves in the table.
 */
export const AUDIT_PK_PREFIX = 'AUDIT#';
/**
 * Prefix of an external-effect log item's partition key: `EFFECT#<effectKey>` (sort key `EFFECT`); the effect key
 * names its consumer already (`effectKey()`).
 */
export const EFFECT_PK_PREFIX = 'EFFECT#';
/** Sort key of an external-effect log item. */
export const EFFECT_SK = 'EFFECT';
/**
 * Prefix of an outbox item's partition key: `OUTBOX#<idempotencyKey>` (sort key `EVENT`). The table is the worker's
 * own, so the key needs no consumer. Attributes: `status` (`PENDING`, then `PUBLISHED`), `messageId`, `envelope` (the
 * envelope's JSON), `requestHash`, `traceHeader`, `createdAt` and `publishedAt` (ISO 8601), and `ttl` once published.
 * The stream relay picks up an item on its INSERT (DynamoDB Streams, filtered on this prefix).
 */
export const OUTBOX_PK_PREFIX = 'OUTBOX#';
/** Sort key of an outbox item. */
export const OUTBOX_SK = 'EVENT';
/** The table's TTL attribute (epoch seconds), set on inbox items only: quarantine items never expire. */
export const INBOX_TTL_ATTRIBUTE = 'ttl';

/** The primary key of an item. */
export interface ItemKey {
  readonly PK: string;
  readonly SK: string;
}

/**
 * The key of the inbox item of an idempotency key for a consumer.
 *
 * @internal
 */
export function inboxKey(consumer: string, idempotencyKey: string): ItemKey {
  return { PK: `${INBOX_PK_PREFIX}${idempotencyKey}`, SK: `${WORKER_SK_PREFIX}${consumer}` };
}

/**
 * The key of the quarantine item of a body (by its SHA-256) for a consumer: the same body is stored once.
 *
 * @internal
 */
export function quarantineKey(consumer: string, bodyHash: string): ItemKey {
  return { PK: `${QUARANTINE_PK_PREFIX}${bodyHash}`, SK: `${WORKER_SK_PREFIX}${consumer}` };
}

/**
 * The key of the outbox item of an idempotency key.
 *
 * @internal
 */
export function outboxKey(idempotencyKey: string): ItemKey {
  return { PK: `${OUTBOX_PK_PREFIX}${idempotencyKey}`, SK: OUTBOX_SK };
}
