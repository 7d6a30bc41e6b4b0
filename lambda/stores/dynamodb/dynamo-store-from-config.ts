import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { localEndpointDefaults } from '../../aws/local-endpoint-defaults.ts';
import type { StoreConfig } from '../../config.ts';
import { createDynamoStore, type DynamoStore } from './dynamo-store.ts';

/**
 * The DynamoDB store of a worker configured by its environment (`DYNAMODB_TABLE`, `DYNAMODB_ENDPOINT`,
 * `DYNAMODB_LEASE_MARGIN_SECONDS`, `RETENTION_SOURCE_SECONDS` + `RETENTION_DLQ_SECONDS`), as
 * `createDynamoWorkerFromConfig` makes it.
 *
 * @internal
 */
export function dynamoStoreFromConfig(config: Extract<StoreConfig, { kind: 'dynamodb' }>): DynamoStore {
  return createDynamoStore({
    client: new DynamoDBClient(
      config.endpoint ? { ...localEndpointDefaults(config.endpoint), endpoint: config.endpoint } : {},
    ),
    tableName: config.tableName,
    leaseMarginSeconds: config.leaseMarginSeconds,
    ...(config.retention ? { retention: config.retention } : {}),
  });
}
