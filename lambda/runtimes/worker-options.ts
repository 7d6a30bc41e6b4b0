import type postgres from 'postgres';
import type { SqsClientSource } from '../sqs/sqs-client-source.ts';
import type { DynamoMessageHandler } from '../stores/dynamodb/dynamo-handler.ts';
import type { DynamoStore } from '../stores/dynamodb/dynamo-store.ts';
import type { MessageHandler } from '../stores/postgres/message-handler.ts';
import type { CommitMode } from '../types.ts';
import type { EngineOptions } from '../worker/engine-options.ts';

/**
 * Options of `createWorker` (the Lambda handler) and `createBatchEngine` (the runtime-neutral core). Only
 * `consumer`, `handlers` and `sql` (PostgreSQL) or `store` (DynamoDB) are required. The engine's own options
 * (`EngineOptions`) plus how the store is given and what only the Lambda runtime reads.
 */
export interface WorkerOptions extends Omit<EngineOptions, 'handlers' | 'store'> {
  /** Domain handlers, one per messageType and schemaVersion (DynamoDB handlers with `store`). */
  // biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
  readonly handlers: readonly MessageHandler<any>[] | readonly DynamoMessageHandler<any>[];
  /** The postgres.js client (module scope, `prepare: false`). Required unless `store` is given. */
  readonly sql?: postgres.Sql;
  /**
   * The DynamoDB store (`createDynamoStore`): inbox and domain state in DynamoDB, each record one TransactWriteItems
   * (docs/dynamodb.md). With it, `sql` is not used, the handlers must be DynamoDB handlers (`defineDynamoHandler`),
   * `commitMode` must stay `per-message`, and `recordConcurrency` may go up to 10.
   */
  readonly store?: DynamoStore;
  /** `per-message`: one transaction per record; `per-batch`: one per batch, a savepoint per record. @default 'per-message' */
  readonly commitMode?: CommitMode;
  /**
   * SQS client for the backoff visibility changes, or a function that makes it on first use (the deployable
   * handler imports the SDK's SQS code only when a record first needs a backoff: see {@link SqsClientSource}).
   * Without it, failures wait for the queue's visibility timeout. Used by `createWorker`; the engine
   * (`createBatchEngine`) changes no visibility.
   */
  readonly sqs?: SqsClientSource;
  /** `createWorker` only: throw when every record of a batch failed, so Lambda backs off. @default true */
  readonly failInvocationOnFullBatchFailure?: boolean;
}
