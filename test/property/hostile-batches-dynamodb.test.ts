import { afterAll, beforeAll, describe, it } from 'vitest';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { type DynamoPropertyStore, dynamoPropertyStore } from '../support/dynamodb-property-store.ts';
import { checkHostileBatches, lambdaRuntime } from '../support/hostile-batch-property.ts';

// The hostile-batch property (test/support/hostile-batch-property.ts) on DynamoDB Local, through the Lambda adapter
// (createWorker) in one warm execution environment per run. `npm run soak:property` runs it longer.

const dynamo = useTestDynamoDb();
const TIMEOUT_MS = 3_000;
let store: DynamoPropertyStore;
beforeAll(async () => {
  store = await dynamoPropertyStore(dynamo, TIMEOUT_MS);
});
afterAll(() => store?.close());

describe('Property: hostile batches on DynamoDB', () => {
  it('never throws nor hangs, applies every good message once, quarantines every bad one', async () => {
    await checkHostileBatches(store, lambdaRuntime(TIMEOUT_MS));
  }, 600_000);
});
