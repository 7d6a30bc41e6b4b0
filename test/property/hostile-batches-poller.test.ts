import { describe, it } from 'vitest';
import { localQueueFixture } from '../e2e/local-queue-fixture.ts';
import { createTestDatabase } from '../support/database.ts';
import { pollerRuntime } from '../support/deliver-through-poller.ts';
import { checkHostileBatches } from '../support/hostile-batch-property.ts';
import { postgresPropertyStore } from '../support/postgres-property-store.ts';

// The hostile-batch property (test/support/hostile-batch-property.ts) through the poller runtime: the real poller on
// fauxqs (every message sent as SQS takes it, a DLQ after 5 receives) over PostgreSQL, in both commit modes, with a
// batch budget of 3 s. Fewer runs than the Lambda runtime's: each waits on real receives and backoffs.
// `npm run soak:property` runs it longer.

const db = await createTestDatabase();
const queues = await localQueueFixture();
const BATCH_TIMEOUT_SECONDS = 3;

describe.each(['per-message', 'per-batch'] as const)(
  'Property: hostile batches through the poller, %s',
  (commitMode) => {
    it('never throws nor hangs, applies every good message once, quarantines every bad one', async () => {
      const store = await postgresPropertyStore(db, commitMode, BATCH_TIMEOUT_SECONDS * 1000);
      const runtime = pollerRuntime({
        queues,
        source: store,
        batchTimeoutSeconds: BATCH_TIMEOUT_SECONDS,
        runLimitMs: 90_000,
      });
      try {
        await checkHostileBatches(store, runtime, { numRuns: 3 });
      } finally {
        await store.proxy.close();
      }
    }, 900_000);
  },
);
