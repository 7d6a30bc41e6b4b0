import type postgres from 'postgres';
import type { CommitStrategy, EngineSettings } from '../../worker/commit-strategy.ts';
import type { RecordOutcome } from '../../worker/outcome.ts';
import { createRecordDependencies, processRecord } from './process-record.ts';

/**
 * Commit mode `per-message` on PostgreSQL: every record in its own transaction (`sql.begin`), records at once up
 * to `recordConcurrency`. A record's outcome is final when its transaction commits, so a failure of one record
 * never touches another.
 *
 * @internal
 */
export function createPerMessageCommit(sql: postgres.Sql, settings: EngineSettings): CommitStrategy {
  const deps = createRecordDependencies(sql, settings);
  return {
    concurrent: true,
    settlesAtCommit: false,
    commitReserveMs: 0,
    async commit(batch) {
      const outcomes = new Map<string, RecordOutcome>();
      await batch.schedule((item) => processRecord(item, deps, batch.state), outcomes);
      return outcomes;
    },
  };
}
