import { ConfigError } from '../errors.ts';
import type { DynamoStore } from '../stores/dynamodb/dynamo-store.ts';
import { dynamoStoreFromConfig } from '../stores/dynamodb/dynamo-store-from-config.ts';
import { probeDynamoStore } from '../stores/dynamodb/probe-dynamo-store.ts';
import type { StoreWiring } from './store-wiring.ts';

/**
 * The DynamoDB store from a worker's configuration: `createDynamoStore` over the table of `DYNAMODB_TABLE`
 * (`DYNAMODB_ENDPOINT` for DynamoDB Local; the inbox items' TTL from the retention settings), and the pause's probe,
 * one GetItem through the store's client (`probeDynamoStore`).
 *
 * @throws ConfigError when the configuration is not of the DynamoDB store.
 * @internal
 */
export const dynamoWiring: StoreWiring<{ readonly store: DynamoStore }> = (config, { probeTimeoutMs }) => {
  const storeConfig = config.store;
  if (storeConfig.kind !== 'dynamodb') {
    throw new ConfigError(
      'WORKER_STORE is not "dynamodb" (unset or "postgres": the PostgreSQL store), but this worker is wired for the DynamoDB store. Set WORKER_STORE=dynamodb and DYNAMODB_TABLE (SqsDatabaseWorker sets both for store: "dynamodb"), or build a PostgreSQL worker with createWorkerFromConfig from sqs-inbox-worker/postgres.',
    );
  }
  const store = dynamoStoreFromConfig(storeConfig);
  return {
    store: 'dynamodb',
    part: { store },
    probe: () => probeDynamoStore(store, config.consumer, probeTimeoutMs),
    async close() {
      store.client.destroy();
    },
  };
};
