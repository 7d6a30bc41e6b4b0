import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DynamoStore } from './dynamo-store.ts';

const documentClients = new WeakMap<DynamoStore, DynamoDBDocumentClient>();

/**
 * The document client of a store (native values; undefined attributes left out), made on first use. It lives here,
 * not in `createDynamoStore`, so that `@aws-sdk/lib-dynamodb` is loaded only by the store's lazily imported commit
 * code, on the first batch, not when a store is made.
 *
 * @internal
 */
export function documentClient(store: DynamoStore): DynamoDBDocumentClient {
  let doc = documentClients.get(store);
  if (!doc) {
    doc = DynamoDBDocumentClient.from(store.client, {
      marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
    });
    documentClients.set(store, doc);
  }
  return doc;
}
