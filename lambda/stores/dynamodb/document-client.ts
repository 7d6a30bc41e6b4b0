import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DynamoStore } from './dynamo-store.ts';

const documentClients = new WeakMap<DynamoStore, DynamoDBDocumentClient>();

/**
 * The document client of a store (native values; undefined attributes left out), made on first use. It lives here,
 * not in `createDynamoStore`, so that the DynamoDB SDK is loaded only by the store's lazily imported code: the
 * public entry point re-exports `createDynamoStore`, and every worker's cold start would load the SDK otherwise.
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
