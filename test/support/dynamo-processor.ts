import type { SQSRecord } from 'aws-lambda';
import type { DynamoMessageHandler } from '../../lambda/stores/dynamodb/dynamo-handler.ts';
import { dynamoRecordStore } from '../../lambda/stores/dynamodb/dynamo-record-store.ts';
import { createDynamoStore, type DynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import type { MessageHandler } from '../../lambda/stores/postgres/message-handler.ts';
import type { EngineSettings } from '../../lambda/worker/commit-strategy.ts';
import { decodeRecord } from '../../lambda/worker/decode-record.ts';
import { createHandlerRegistry } from '../../lambda/worker/handler-registry.ts';
import type { RecordOutcome } from '../../lambda/worker/outcome.ts';
import { processRecord, type RecordSettings } from '../../lambda/worker/process-record.ts';
import type { TestDynamoDb } from './dynamodb.ts';

/** Processes one record on the DynamoDB store, the way the engine's DynamoDB strategy does. */
export type DynamoProcessor = ((
  record: SQSRecord,
  options?: { remainingMs?: number },
) => Promise<RecordOutcome>) & {
  readonly store: DynamoStore;
};

/** The settings a processor runs with: the engine's record settings and its payload reader. */
type ProcessorSettings = RecordSettings & Pick<EngineSettings, 'payloads' | 'workerVersion'>;

/** A record processor on a fresh store of `table` (store-level tests: no SQS, no engine). */
export function dynamoProcessor(
  dynamo: TestDynamoDb,
  table: string,
  // biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
  handlers: readonly DynamoMessageHandler<any>[],
  overrides: Partial<ProcessorSettings> & { leaseMarginSeconds?: number } = {},
): DynamoProcessor {
  const { leaseMarginSeconds, ...rest } = overrides;
  const store = createDynamoStore({ client: dynamo.newClient(), tableName: table, leaseMarginSeconds });
  const registry = createHandlerRegistry(handlers as unknown as MessageHandler[]);
  const settings: ProcessorSettings = {
    consumer: 'case-worker',
    workerVersion: 'test-version',
    terminalPolicy: 'quarantine',
    attemptDefaults: { maxBusinessAttempts: 10 },
    retryPolicy: {},
    backoff: { baseSeconds: 2, maxSeconds: 900 },
    now: Date.now,
    random: () => 0.5,
    payloads: { s3: async () => undefined, maxBytes: 1024 * 1024 },
    ...rest,
  };
  const records = dynamoRecordStore(store, settings);
  const process = (record: SQSRecord, options: { remainingMs?: number } = {}) =>
    processRecord(
      {
        record,
        receiveCount: Number(record.attributes?.ApproximateReceiveCount) || 1,
        decoded: decodeRecord(record, registry),
      },
      records,
      settings,
      { databaseDown: false, remainingMs: () => options.remainingMs ?? 30_000 },
    );
  return Object.assign(process, { store });
}
