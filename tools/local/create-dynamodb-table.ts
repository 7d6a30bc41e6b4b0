import {
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import { INBOX_TTL_ATTRIBUTE } from '../../lambda/stores/dynamodb/item-keys.ts';

/**
 * Creates the worker's DynamoDB table as the deployed one is laid out (`PK` and `SK` strings, on-demand, TTL on
 * `ttl`, a stream of new images for the outbox relay) for DynamoDB Local, tests and `npm start -- --store dynamodb`.
 * An existing table is left as it is. Returns the table's stream ARN (none with `stream: false`, for a test without an
 * outbox: DynamoDB Local keeping its items in files spends most of each write describing the stream once the stream
 * holds a few thousand records). Deployed tables come from the CDK stack, not from here.
 *
 * @example
 * ```ts
 * await createDynamoDbTable(new DynamoDBClient({ endpoint }), 'sqs-worker');
 * ```
 */
export async function createDynamoDbTable(
  client: DynamoDBClient,
  tableName: string,
  options: { readonly stream?: boolean } = {},
): Promise<{ streamArn: string | undefined }> {
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          { AttributeName: 'PK', AttributeType: 'S' },
          { AttributeName: 'SK', AttributeType: 'S' },
        ],
        KeySchema: [
          { AttributeName: 'PK', KeyType: 'HASH' },
          { AttributeName: 'SK', KeyType: 'RANGE' },
        ],
        ...(options.stream === false
          ? {}
          : { StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_IMAGE' } }),
      }),
    );
  } catch (error) {
    if (error instanceof ResourceInUseException) return streamOf(client, tableName);
    throw error;
  }
  await waitUntilTableExists({ client, maxWaitTime: 30, minDelay: 1 }, { TableName: tableName });
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: tableName,
      TimeToLiveSpecification: { AttributeName: INBOX_TTL_ATTRIBUTE, Enabled: true },
    }),
  );
  return streamOf(client, tableName);
}

async function streamOf(
  client: DynamoDBClient,
  tableName: string,
): Promise<{ streamArn: string | undefined }> {
  const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
  return { streamArn: Table?.LatestStreamArn };
}
