import { describe, it } from 'vitest';
import { createTestDatabase } from '../support/database.ts';
import { checkHostileBatches, lambdaRuntime } from '../support/hostile-batch-property.ts';
import { postgresPropertyStore } from '../support/postgres-property-store.ts';

// The hostile-batch property (test/support/hostile-batch-property.ts) on PostgreSQL, in both commit modes, through
// the Lambda adapter (createWorker) in one warm execution environment per run, with the Lambda's default timeout of
// 3 s. `npm run soak:property` runs it longer.

const db = await createTestDatabase();
const TIMEOUT_MS = 3_000;

describe.each(['per-message', 'per-batch'] as const)(
  'Property: hostile batches on PostgreSQL, %s',
  (commitMode) => {
    it('never throws nor hangs, applies every good message once, quarantines every bad one', async () => {
      const store = await postgresPropertyStore(db, commitMode, TIMEOUT_MS);
      try {
        await checkHostileBatches(store, lambdaRuntime(TIMEOUT_MS));
      } finally {
        await store.proxy.close();
      }
    }, 600_000);
  },
);
