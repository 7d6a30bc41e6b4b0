import type postgres from 'postgres';
import { canaryHandler } from '../../canary/canary-handler.ts';
import type { CommitMode } from '../../types.ts';
import type { Store } from '../../worker/store.ts';
import { createPerBatchCommit } from './commit-per-batch.ts';
import { createPerMessageCommit } from './commit-per-message.ts';

/**
 * The PostgreSQL store of a worker on the postgres.js client `sql`: its commit strategy is `commitMode`'s —
 * `per-message` (`commit-per-message.ts`: one transaction per record, up to `recordConcurrency` at once) or
 * `per-batch` (`commit-per-batch.ts`: one transaction per batch, a savepoint per record when needed). It refuses a
 * record concurrency above the pool size (a record holds a connection for its transaction) and, per batch, a
 * client that cannot send arrays or records run at once.
 *
 * `createBatchEngine` makes it from the `sql` option. `sql` is undefined only while options that lack it are
 * checked: its problems then count a pool of one, and no engine is built.
 *
 * @internal
 */
export function postgresStore(sql: postgres.Sql | undefined, commitMode: CommitMode | undefined): Store {
  return {
    canaryHandler,
    problems({ recordConcurrency }) {
      const problems: string[] = [];
      const poolSize = sql?.options?.max ?? 1;
      if (!Number.isInteger(recordConcurrency) || recordConcurrency < 1 || recordConcurrency > poolSize) {
        problems.push(
          `recordConcurrency must be a whole number from 1 to the pool size ${poolSize} (given ${recordConcurrency}); raise the pool size (postgres max) or lower recordConcurrency`,
        );
      }
      if (commitMode === 'per-batch' && sql?.options?.fetch_types === false) {
        problems.push(
          'commitMode per-batch claims a batch with arrays, which a postgres.js client with fetch_types: false cannot send; leave fetch_types on (the default)',
        );
      }
      if (commitMode === 'per-batch' && recordConcurrency !== 1) {
        problems.push(
          `commitMode per-batch runs records one after another in one transaction; set recordConcurrency to 1 (given ${recordConcurrency})`,
        );
      }
      return problems;
    },
    commitStrategy(settings) {
      return commitMode === 'per-batch'
        ? createPerBatchCommit(sql as postgres.Sql, settings)
        : createPerMessageCommit(sql as postgres.Sql, settings);
    },
  };
}
