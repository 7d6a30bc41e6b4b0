import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { checkEffectNames, describeEffectError, effectRequestHash } from '../../effects/effect-request.ts';
import type { ExternalEffectResult } from '../../effects/perform-external-effect.ts';
import { RetryableError, TerminalError } from '../../errors.ts';
import { EFFECT_PK_PREFIX, EFFECT_SK, type ItemKey } from './item-keys.ts';

/** Options of {@link performDynamoExternalEffect}. */
export interface PerformDynamoExternalEffectOptions {
  /** The handler's document client (`context.client`): each log write is a request of its own, never the handler's transaction. */
  readonly client: DynamoDBDocumentClient;
  /** The worker's table (`context.table`): the log items sit beside the inbox (`EFFECT#<effectKey>`). */
  readonly tableName: string;
  /** Stable key of this effect (≤ 200 characters; `effectKey(consumer, operation, idempotencyKey)`), also the provider's idempotency key. */
  readonly effectKey: string;
  /** Provider name (≤ 100 characters), e.g. `notifications-http`. */
  readonly provider: string;
  /** Operation name (≤ 100 characters), e.g. `send-escalation-notification`. */
  readonly operation: string;
  /** The request content; only its hash is stored (never the values). */
  readonly request: unknown;
  /**
   * Calls the provider with `idempotencyKey` (= `effectKey`) and returns its reference (≤ 300 characters). Throw
   * `TerminalError` when the provider rejects the request for good; anything else is an unknown outcome, retried
   * later with the same key.
   */
  readonly call: (idempotencyKey: string) => Promise<{ reference: string }>;
  /**
   * Seconds the log item lives after its last write (DynamoDB's TTL on `ttl`); keep it at least the inbox items' TTL
   * (source + DLQ retention + a day), so no redelivery outlives it. Unset: kept until deleted.
   */
  readonly ttlSeconds?: number;
}

/** The log item as stored. */
interface EffectItem {
  readonly status: 'PENDING' | 'COMPLETED' | 'FAILED_TERMINAL';
  readonly providerKey: string;
  readonly requestHash: string;
  readonly providerReference?: string;
  readonly attempts: number;
  readonly lastError?: string;
}

/**
 * The external-effect log on the DynamoDB store, with the semantics of {@link performExternalEffect} on PostgreSQL
 * (pattern document §17): one item per effect key, recorded PENDING (or its attempt counted) by a conditional
 * UpdateItem BEFORE the provider is called; COMPLETED returns the stored reference without a call
 * (`replayed: true`); another request under the key is `EFFECT_HASH_MISMATCH` and a provider rejection stays
 * `EFFECT_FAILED_TERMINAL` (terminal, never called again); any other failure is recorded in `lastError` and
 * rethrown retryable (its code, or `EFFECT_OUTCOME_UNKNOWN`). A crash between the call and the COMPLETED write leaves
 * the item PENDING: the next attempt calls again with the same key, which the provider deduplicates.
 *
 * @example
 * ```ts
 * async handle({ client, table, consumer, payload, envelope }) {
 *   await performDynamoExternalEffect({
 *     client,
 *     tableName: table,
 *     effectKey: effectKey(consumer, 'escalation-notification', envelope.idempotencyKey),
 *     provider: provider.name,
 *     operation: 'send-escalation-notification',
 *     request,
 *     call: (idempotencyKey) => provider.send(request, idempotencyKey),
 *   });
 *   return { writes: [] };
 * }
 * ```
 */
export async function performDynamoExternalEffect(
  options: PerformDynamoExternalEffectOptions,
): Promise<ExternalEffectResult> {
  const { effectKey, provider, operation } = options;
  checkEffectNames({ effectKey, provider, operation });
  const requestHash = effectRequestHash(effectKey, { provider, operation, request: options.request });
  // Imported on the first effect, as the store's commit code is on the first batch: a handler module that imports
  // this function loads none of the document client's commands at a worker's cold start.
  const log = effectLog(options, await import('@aws-sdk/lib-dynamodb'));
  const current = await log.recordAttempt(requestHash);
  if (current.requestHash !== requestHash) {
    throw new TerminalError(
      'EFFECT_HASH_MISMATCH',
      `External effect ${effectKey} (${provider}/${operation}) was first requested with different content (request hash ${current.requestHash.slice(0, 12)}…, now ${requestHash.slice(0, 12)}…); a key names one effect: derive a new key for a different request`,
    );
  }
  if (current.status === 'COMPLETED') {
    return { reference: current.providerReference as string, replayed: true, attempts: current.attempts };
  }
  if (current.status === 'FAILED_TERMINAL') {
    throw new TerminalError(
      'EFFECT_FAILED_TERMINAL',
      `External effect ${effectKey} (${provider}/${operation}) was rejected by the provider earlier (${current.lastError ?? 'no detail'}); it is not retried`,
    );
  }
  const reference = await callProvider(options, current.providerKey, log);
  if (await log.complete(reference)) return { reference, replayed: false, attempts: current.attempts };
  // A concurrent attempt completed it first; the provider deduplicated on the key, so its reference stands.
  const stored = await log.read();
  if (stored?.status === 'COMPLETED') {
    return { reference: stored.providerReference as string, replayed: false, attempts: stored.attempts };
  }
  throw new RetryableError(
    'EFFECT_LOG_RACE',
    `External effect ${effectKey} changed state while it was recorded; retry`,
  );
}

/** Calls the provider; a failure is recorded on the item (best effort) and rethrown as the log's outcome. */
async function callProvider(
  options: PerformDynamoExternalEffectOptions,
  providerKey: string,
  log: EffectLog,
): Promise<string> {
  const { effectKey, provider, operation } = options;
  try {
    const { reference } = await options.call(providerKey);
    if (typeof reference !== 'string' || reference.length < 1 || reference.length > 300) {
      throw new RetryableError(
        'EFFECT_BAD_REFERENCE',
        `Provider ${provider} returned no usable reference for ${effectKey} (expected 1 to 300 characters)`,
      );
    }
    return reference;
  } catch (error) {
    const terminal = error instanceof TerminalError;
    const detail = describeEffectError(error);
    // Best effort: the item is PENDING either way and the next attempt reuses the key.
    await log.fail(terminal, detail).catch(() => {});
    if (terminal) throw error;
    throw new RetryableError(
      error instanceof RetryableError ? error.code : 'EFFECT_OUTCOME_UNKNOWN',
      `External effect ${effectKey} (${provider}/${operation}) did not confirm: ${detail}; it will be retried with the same idempotency key`,
      { cause: error },
    );
  }
}

/** The writes and reads of one effect's log item. */
interface EffectLog {
  /** PENDING for a new key, or the attempt counted on a PENDING item of this request; else the item as it is. */
  recordAttempt(requestHash: string): Promise<EffectItem>;
  /** COMPLETED with the reference; false when the item was not PENDING any more. */
  complete(reference: string): Promise<boolean>;
  /** The call's failure: FAILED_TERMINAL, or PENDING with its error. */
  fail(terminal: boolean, detail: string): Promise<void>;
  read(): Promise<EffectItem | undefined>;
}

function effectLog(
  options: PerformDynamoExternalEffectOptions,
  { GetCommand, UpdateCommand }: typeof import('@aws-sdk/lib-dynamodb'),
): EffectLog {
  const { client, tableName, effectKey } = options;
  const Key: ItemKey = { PK: `${EFFECT_PK_PREFIX}${effectKey}`, SK: EFFECT_SK };
  // DynamoDB refuses a name the expression does not use: `#ttl` only with a TTL.
  const names = { '#status': 'status', ...(options.ttlSeconds === undefined ? {} : { '#ttl': 'ttl' }) };
  const ttl = () =>
    options.ttlSeconds === undefined ? {} : { ':ttl': Math.floor(Date.now() / 1000) + options.ttlSeconds };
  const setTtl = options.ttlSeconds === undefined ? '' : ', #ttl = :ttl';
  const read = async () =>
    (await client.send(new GetCommand({ TableName: tableName, Key, ConsistentRead: true }))).Item as
      | EffectItem
      | undefined;
  return {
    async recordAttempt(requestHash) {
      try {
        const { Attributes } = await client.send(
          new UpdateCommand({
            TableName: tableName,
            Key,
            UpdateExpression:
              'SET #status = if_not_exists(#status, :pending), requestHash = if_not_exists(requestHash, :hash), ' +
              'providerKey = if_not_exists(providerKey, :key), provider = if_not_exists(provider, :provider), ' +
              `#operation = if_not_exists(#operation, :operation), createdAt = if_not_exists(createdAt, :now), updatedAt = :now${setTtl} ` +
              'ADD attempts :one',
            ConditionExpression: 'attribute_not_exists(PK) OR (#status = :pending AND requestHash = :hash)',
            ExpressionAttributeNames: { ...names, '#operation': 'operation' },
            ExpressionAttributeValues: {
              ':pending': 'PENDING',
              ':hash': requestHash,
              ':key': effectKey,
              ':provider': options.provider,
              ':operation': options.operation,
              ':now': new Date().toISOString(),
              ':one': 1,
              ...ttl(),
            },
            ReturnValues: 'ALL_NEW',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        return Attributes as EffectItem;
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        // The key is not a PENDING item of this request: the item the condition saw decides.
        const existing = error.Item ? (unmarshall(error.Item) as EffectItem) : await read();
        if (!existing)
          throw new RetryableError(
            'EFFECT_LOG_RACE',
            `External effect ${effectKey} vanished while being read; retry`,
          );
        return existing;
      }
    },
    async complete(reference) {
      try {
        await client.send(
          new UpdateCommand({
            TableName: tableName,
            Key,
            UpdateExpression: `SET #status = :completed, providerReference = :ref, completedAt = :now, updatedAt = :now${setTtl} REMOVE lastError`,
            ConditionExpression: '#status = :pending',
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: {
              ':completed': 'COMPLETED',
              ':pending': 'PENDING',
              ':ref': reference,
              ':now': new Date().toISOString(),
              ...ttl(),
            },
          }),
        );
        return true;
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return false;
        throw error;
      }
    },
    async fail(terminal, detail) {
      await client.send(
        new UpdateCommand({
          TableName: tableName,
          Key,
          UpdateExpression: 'SET #status = :status, lastError = :error, updatedAt = :now',
          ConditionExpression: '#status = :pending',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':status': terminal ? 'FAILED_TERMINAL' : 'PENDING',
            ':pending': 'PENDING',
            ':error': detail,
            ':now': new Date().toISOString(),
          },
        }),
      );
    },
    read,
  };
}
