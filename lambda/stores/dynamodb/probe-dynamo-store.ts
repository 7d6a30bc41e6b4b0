import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoStore } from './dynamo-store.ts';
import { inboxKey } from './item-keys.ts';

/**
 * The idempotency key of the inbox item a probe reads. Nothing writes it, so the read finds no item: the cheapest
 * answer DynamoDB gives (half a read unit). A domain key equal to it would only be read, never changed.
 *
 * @internal
 */
export const PROBE_IDEMPOTENCY_KEY = 'sqs-inbox-worker#store-probe';

/**
 * The DynamoDB store's "the store answers" signal for the poller's pause (PostgreSQL's is `select 1`): one GetItem
 * of an inbox item of `consumer` through the store's own client, table and credentials, so it fails where the
 * worker's calls fail (the endpoint unreachable, the table gone, the role's credentials refused). It needs nothing
 * the worker's role lacks: GetItem on an inbox item (`IDEMP#…`) is the gate's own read. Resolves when DynamoDB
 * answers (item or not); rejects with the SDK's error, or after `timeoutMs`, the request aborted: an HTTP request
 * holds no pooled connection that a later probe would wait behind.
 *
 * @internal
 */
export async function probeDynamoStore(
  store: DynamoStore,
  consumer: string,
  timeoutMs: number,
): Promise<void> {
  const { PK, SK } = inboxKey(consumer, PROBE_IDEMPOTENCY_KEY);
  await store.client.send(
    new GetItemCommand({
      TableName: store.tableName,
      Key: { PK: { S: PK }, SK: { S: SK } },
      ProjectionExpression: 'PK',
    }),
    { abortSignal: AbortSignal.timeout(timeoutMs) },
  );
}
