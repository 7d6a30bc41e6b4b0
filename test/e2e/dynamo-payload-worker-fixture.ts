import { beforeAll } from 'vitest';
import { createDynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import { type TestDynamoDb, useTestDynamoDb } from '../support/dynamodb.ts';
import { exampleDynamoWorker } from '../support/test-worker.ts';
import { type LocalQueueFixture, localQueueFixture } from './local-queue-fixture.ts';

/** What {@link dynamoPayloadWorkerFixture} gives a test file; `bucket`, `table` and `worker` are set before its tests. */
export interface DynamoPayloadWorkerFixture {
  readonly local: LocalQueueFixture;
  readonly dynamo: TestDynamoDb;
  /** The deployment's payload bucket. */
  readonly bucket: string;
  /** The deployment's table. */
  readonly table: string;
  /** The example domain's DynamoDB worker, with the worker's S3 key and table role. */
  readonly worker: ReturnType<typeof exampleDynamoWorker>;
}

/**
 * One DynamoDB deployment for a test file of `payloadRef` handling: fauxqs (S3) and DynamoDB Local behind the local
 * IAM layer, a table `name` and its payload bucket, and the worker of the example domain's DynamoDB handlers reading
 * S3 with its role's key and calling the table with its role (so a missing grant fails the test as AWS would refuse
 * it).
 */
export async function dynamoPayloadWorkerFixture(name: string): Promise<DynamoPayloadWorkerFixture> {
  const local = await localQueueFixture({ store: 'dynamodb' });
  const dynamo = useTestDynamoDb();
  const fixture = { local, dynamo } as {
    -readonly [K in keyof DynamoPayloadWorkerFixture]: DynamoPayloadWorkerFixture[K];
  };
  beforeAll(async () => {
    await local.frontDynamoDb(dynamo.endpoint);
    fixture.table = await dynamo.createTable(name);
    // One deployment: its payload bucket and its table.
    fixture.bucket = await local.bucket(`payloads-${name}`, { tableName: fixture.table });
    fixture.worker = exampleDynamoWorker(
      createDynamoStore({ client: local.dynamodbAs('worker'), tableName: fixture.table }),
      { s3: local.as('worker').s3 },
    );
  });
  return fixture;
}
