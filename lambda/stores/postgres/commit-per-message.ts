import type postgres from 'postgres';
import type { CommitStrategy, EngineSettings } from '../../worker/commit-strategy.ts';
import { inlineCommit } from '../../worker/inline-commit.ts';
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
  return inlineCommit(postgresRecordStore(sql, settings, inlineCompleter(sql)));
}
