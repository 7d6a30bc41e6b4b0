import type { DynamoStore } from '../stores/dynamodb/dynamo-store.ts';
import { postgresStore } from '../stores/postgres/postgres-store.ts';
import { type BatchEngine, createEngine } from '../worker/batch-engine.ts';
import type { WorkerOptions } from './worker-options.ts';

/**
 * What is wrong with how the options give their store: neither or both of `sql` and `store`, handlers of the other
 * store, a PostgreSQL commit mode on DynamoDB. A DynamoDB handler run by the PostgreSQL engine would return its
 * writes to nobody and be acknowledged without an effect: refused here, at cold start.
 */
function storeProblems(options: WorkerOptions): string[] {
  const problems: string[] = [];
  if (!options.sql && !options.store) {
    problems.push('give sql (a postgres.js client, PostgreSQL) or store (createDynamoStore, DynamoDB)');
  }
  if (options.sql && options.store) {
    problems.push('give sql (PostgreSQL) or store (DynamoDB), not both: one worker has one inbox');
  }
  const dynamo = options.store !== undefined;
  const mismatched = (options.handlers as readonly { messageType: string; store?: string }[])
    .filter((handler) => (handler.store === 'dynamodb') !== dynamo)
    .map((handler) => handler.messageType);
  if (mismatched.length > 0) {
    problems.push(
      dynamo
        ? `handlers ${mismatched.join(', ')} are PostgreSQL handlers (defineHandler) and the store is DynamoDB; use defineDynamoHandler`
        : `handlers ${mismatched.join(', ')} are DynamoDB handlers (defineDynamoHandler); give them a DynamoDB store (store: createDynamoStore(…)) or use defineHandler`,
    );
  }
  if (dynamo && options.commitMode === 'per-batch') {
    problems.push(
      'commitMode per-batch is a PostgreSQL mode (one transaction per batch); with a DynamoDB store every record is its own TransactWriteItems: leave commitMode unset',
    );
  }
  return problems;
}

/**
 * Builds the runtime-neutral core of a worker: exactly-once effects under at-least-once delivery, for any runtime
 * that receives SQS records (the Lambda handler of `createWorker`, a long-running poller, a test).
 *
 * The store is `store` (DynamoDB, `createDynamoStore`) or PostgreSQL on `sql`, committed by `commitMode`:
 * `per-message` (one transaction per record, up to `recordConcurrency` at once) or `per-batch` (one transaction per
 * batch). Per record the engine (`lambda/worker/batch-engine.ts`) decodes and routes; the store's commit strategy
 * claims the inbox row, skips duplicates, rejects a reused key with another payload, applies the domain handler and
 * marks the row COMPLETED. The options are validated here.
 *
 * The engine keeps state between batches (the deadline guard's samples, the per-batch savepoint mode): make one per
 * worker and reuse it; batches may run at once.
 *
 * @throws ConfigError when an option is invalid (every problem listed).
 *
 * @example
 * ```ts
 * const engine = createBatchEngine({ consumer: 'case-worker', handlers: exampleHandlers, sql: createSql(config.database) });
 * const { outcomes } = await engine.processBatch(messages.map(toSqsRecord), { remainingMs: () => deadline - Date.now() });
 * for (const outcome of outcomes) if (outcome.acknowledged) await deleteMessage(outcome.messageId);
 * ```
 */
export function createBatchEngine(options: WorkerOptions): BatchEngine {
  // The DynamoDB strategy comes with its store: a PostgreSQL worker's bundle never loads the DynamoDB code.
  const store = options.store ?? postgresStore(options.sql, options.commitMode);
  return createEngine({ ...options, store }, storeProblems(options));
}

/**
 * {@link createBatchEngine} for options that give their `store`: the same engine and checks, in a function that
 * does not refer to the PostgreSQL store, so that a bundle which never gives `sql` (the DynamoDB worker's) leaves
 * the PostgreSQL store's code out.
 *
 * @internal
 */
export function createStoreBatchEngine(
  options: WorkerOptions & { readonly store: DynamoStore },
): BatchEngine {
  return createEngine(options, storeProblems(options));
}
