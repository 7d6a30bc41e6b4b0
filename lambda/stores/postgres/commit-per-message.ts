import type postgres from 'postgres';
import type { CommitStrategy, EngineSettings } from '../../worker/commit-strategy.ts';
import type { RecordOutcome } from '../../worker/outcome.ts';
import { processRecord } from '../../worker/process-record.ts';
import { inlineCompleter } from './inline-completer.ts';
import { postgresRecordStore } from './postgres-record-store.ts';

/**
 * Commit mode `per-message` on PostgreSQL: every record in its own transaction (`inlineCompleter`), records at once
 * up to `recordConcurrency`. A record's outcome is final when its transaction commits, so a failure of one record
 * never touches another.
 *
 * @internal
 */
export function createPerMessageCommit(sql: postgres.Sql, settings: EngineSettings): CommitStrategy {
  const records = postgresRecordStore(sql, settings, inlineCompleter(sql));
  return {
    concurrent: true,
    settlesAtCommit: false,
    commitReserveMs: 0,
    async commit(batch) {
      const outcomes = new Map<string, RecordOutcome>();
      await batch.schedule((item) => processRecord(item, records, settings, batch.state), outcomes);
      return outcomes;
    },
  };
}
