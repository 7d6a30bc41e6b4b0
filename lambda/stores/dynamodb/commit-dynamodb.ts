import type { CommitStrategy, EngineSettings } from '../../worker/commit-strategy.ts';
import { inlineCommit } from '../../worker/inline-commit.ts';
import { dynamoRecordStore } from './dynamo-record-store.ts';
import type { DynamoStore } from './dynamo-store.ts';

/**
 * The DynamoDB store's commit strategy: every record its own gate and its own TransactWriteItems (domain items and
 * inbox completion), records at once up to `recordConcurrency`. A record's outcome is final when its transaction
 * commits; nothing is shared between records, so there is no batch commit to keep time for.
 *
 * @internal
 */
export function createDynamoDbCommit(store: DynamoStore, settings: EngineSettings): CommitStrategy {
  return inlineCommit(dynamoRecordStore(store, settings));
}
