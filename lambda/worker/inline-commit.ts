import type { CommitStrategy } from './commit-strategy.ts';
import type { RecordOutcome } from './outcome.ts';
import type { RecordStore } from './record-store.ts';

/**
 * The commit strategy of a store that commits each record alone (its own transaction or TransactWriteItems): the
 * records run at once up to `recordConcurrency` with the store's primitives, and a record's outcome is final the
 * moment it is set, so nothing of the batch's budget is kept back.
 *
 * @internal
 */
export function inlineCommit<Unit, Claim>(records: RecordStore<Unit, Claim>): CommitStrategy {
  return {
    concurrent: true,
    settlesAtCommit: false,
    commitReserveMs: 0,
    async commit(batch) {
      const outcomes = new Map<string, RecordOutcome>();
      await batch.run(records, outcomes);
      return outcomes;
    },
  };
}
