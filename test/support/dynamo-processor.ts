import type { SQSRecord } from 'aws-lambda';
import type { DynamoMessageHandler } from '../../lambda/stores/dynamodb/dynamo-handler.ts';
import { createDynamoStore, type DynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import {
  type DynamoRecordDependencies,
  processDynamoRecord,
} from '../../lambda/stores/dynamodb/process-dynamo-record.ts';
import type { MessageHandler } from '../../lambda/stores/postgres/message-handler.ts';
import { decodeRecord } from '../../lambda/worker/decode-record.ts';
import { createHandlerRegistry } from '../../lambda/worker/handler-registry.ts';
import type { RecordOutcome } from '../../lambda/worker/outcome.ts';
import type { TestDynamoDb } from './dynamodb.ts';

/** Processes one record on the DynamoDB store, the way the engine's DynamoDB strategy does. */
export type DynamoProcessor = ((
  record: SQSRecord,
  options?: { remainingMs?: number },
) => Promise<RecordOutcome>) & {
  readonly store: DynamoStore;
};

/** A record processor on a fresh store of `table` (store-level tests: no SQS, no engine). */
export function dynamoProcessor(
  dynamo: TestDynamoDb,
  table: string,
  // biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
  handlers: readonly DynamoMessageHandler<any>[],
  overrides: Partial<Omit<DynamoRecordDependencies, 'store'>> & { leaseMarginSeconds?: number } = {},
): DynamoProcessor {
  const { leaseMarginSeconds, ...rest } = overrides;
  const store = createDynamoStore({ client: dynamo.newClient(), tableName: table, leaseMarginSeconds });
  const registry = createHandlerRegistry(handlers as unknown as MessageHandler[]);
  const deps: DynamoRecordDependencies = {
    store,
    consumer: 'case-worker',
    terminalPolicy: 'quarantine',
    attemptDefaults: { maxBusinessAttempts: 10 },
    backoff: { baseSeconds: 2, maxSeconds: 900 },
    now: Date.now,
    random: () => 0.5,
    payloads: { s3: async () => undefined, maxBytes: 1024 * 1024 },
    ...rest,
  };
  const process = (record: SQSRecord, options: { remainingMs?: number } = {}) =>
    processDynamoRecord(
      {
        record,
        receiveCount: Number(record.attributes?.ApproximateReceiveCount) || 1,
        decoded: decodeRecord(record, registry),
      },
      deps,
      { databaseDown: false, remainingMs: () => options.remainingMs ?? 30_000 },
    );
  return Object.assign(process, { store });
}
