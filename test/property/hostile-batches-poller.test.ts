import { describe, it } from 'vitest';
import { localQueueFixture } from '../e2e/local-queue-fixture.ts';
import { createTestDatabase } from '../support/database.ts';
import { pollerRuntime } from '../support/deliver-through-poller.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { dynamoPropertyStore } from '../support/dynamodb-property-store.ts';
import { checkHostileBatches } from '../support/hostile-batch-property.ts';
import { postgresPropertyStore } from '../support/postgres-property-store.ts';

// The hostile-batch property (test/support/hostile-batch-property.ts) through the poller runtime: the real poller on
// fauxqs (every message sent as SQS takes it, a DLQ after 5 receives) over PostgreSQL in both commit modes and over
// DynamoDB (its pause probing with the store's GetItem), with a batch budget of 3 s. Fewer runs than the Lambda
// runtime's: each waits on real receives and backoffs. `npm run soak:property` runs it longer.

const db = await createTestDatabase();
const queues = await localQueueFixture();
const dynamo = useTestDynamoDb();
const BATCH_TIMEOUT_SECONDS = 3;

describe.each([
  { store: 'postgres', commitMode: 'per-message' },
  { store: 'postgres', commitMode: 'per-batch' },
  { store: 'dynamodb', commitMode: 'per-message' },
] as const)('Property: hostile batches through the poller, $store $commitMode', ({ store, commitMode }) => {
  it('never throws nor hangs, applies every good message once, quarantines every bad one', async () => {
    const { source, close } =
      store === 'postgres'
        ? await postgresPropertyStore(db, commitMode, BATCH_TIMEOUT_SECONDS * 1000).then((pg) => ({
            source: pg,
            close: () => pg.proxy.close(),
          }))
        : await dynamoPropertyStore(dynamo, BATCH_TIMEOUT_SECONDS * 1000).then((ddb) => ({
            source: ddb,
            close: () => ddb.close(),
          }));
    const runtime = pollerRuntime({
      queues,
      source,
      batchTimeoutSeconds: BATCH_TIMEOUT_SECONDS,
      runLimitMs: 90_000,
    });
    try {
      await checkHostileBatches(source, runtime, { numRuns: 3 });
    } finally {
      await close();
    }
  }, 900_000);
});
