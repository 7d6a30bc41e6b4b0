import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { S3Client } from '@aws-sdk/client-s3';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { BatchGetCommand, type DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { caseItemKey } from '../../lambda/domain/dynamodb/index.ts';
import { dynamoOutboxWrite } from '../../lambda/stores/dynamodb/dynamo-outbox-write.ts';
import { createDynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import { outboxKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import { matchesOutboxStreamFilter } from '../../lambda/stores/dynamodb/outbox-stream-filter.ts';
import { relayDynamoOutbox } from '../../lambda/stores/dynamodb/relay-dynamo-outbox.ts';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import { startDynamoStreamMapping } from './dynamodb-stream-mapping.ts';
import { waitFor } from './wait-for.ts';

/** What the DynamoDB demo's producer side needs: the table and its stream, the relay's clients, the queue. */
export interface DynamoDemoOutboxOptions {
  /** The operator's document client: the producers' transactions. */
  readonly doc: DynamoDBDocumentClient;
  readonly table: string;
  readonly streamArn: string;
  /** DynamoDB Local's endpoint, for its stream. */
  readonly streamsEndpoint: string;
  readonly region: string;
  /** The relay's clients (its role's key): its sends and its outbox item reads and marks. */
  readonly relay: { readonly sqs: SQSClient; readonly dynamodb: DynamoDBClient };
  readonly queueUrl: string;
  /**
   * Where a producer's payload too large for an outbox item goes (`dynamoOutboxWrite`'s `offload`): the producer's
   * S3 client and the payload bucket. Without it such an event is refused.
   */
  readonly offload?: { readonly s3: S3Client; readonly bucket: string };
}

/** The producer side of a DynamoDB demo run, running. */
export interface DynamoDemoOutbox {
  /**
   * Writes each event in a producer transaction with its state change (a request item of its aggregate), its
   * payload offloaded to S3 when it is too large for an outbox item.
   */
  produce(bodies: readonly string[]): Promise<void>;
  /** Whether every produced event's item is PUBLISHED within `timeoutMs`. */
  published(timeoutMs: number): Promise<boolean>;
  /** Stops the stream relay: the events written, published and the relay's invocations. */
  stop(): Promise<{ enqueued: number; published: number; relayRuns: number }>;
}

/**
 * The DynamoDB demo's producer side: producer transactions write a case's request item and its event's outbox item
 * together (`dynamoOutboxWrite`), and the relay's code publishes them from the table's stream, read by the local
 * stream mapping as the stack's event source mapping would (filtered on outbox INSERTs, retried from a failure).
 */
export function startDynamoDemoOutbox(options: DynamoDemoOutboxOptions): DynamoDemoOutbox {
  const keys: string[] = [];
  const store = createDynamoStore({ client: options.relay.dynamodb, tableName: options.table });
  const streams = new DynamoDBStreamsClient({
    endpoint: options.streamsEndpoint,
    region: options.region,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const logger = new Logger({ serviceName: 'outbox-relay', logLevel: 'SILENT' });
  const metrics = new Metrics({ namespace: 'SqsInboxWorkerLocal', serviceName: 'outbox-relay' });
  const mapping = startDynamoStreamMapping({
    streams,
    streamArn: options.streamArn,
    filter: (record) => matchesOutboxStreamFilter(record as never),
    handler: (event) =>
      relayDynamoOutbox(event.Records as never, {
        store,
        sqs: options.relay.sqs,
        queueUrl: options.queueUrl,
        logger,
        metrics,
      }),
  });
  const publishedCount = () => countPublished(options, keys);
  return {
    async produce(bodies) {
      for (const body of bodies) {
        const envelope = JSON.parse(body) as Envelope;
        const { item } = await dynamoOutboxWrite(options.table, envelope, { offload: options.offload });
        await options.doc.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Put: {
                  TableName: options.table,
                  Item: { PK: requestPartition(envelope), SK: `REQUEST#${envelope.idempotencyKey}` },
                },
              },
              item,
            ],
          }),
        );
        keys.push(envelope.idempotencyKey);
      }
    },
    published: (timeoutMs) => waitFor(async () => (await publishedCount()) === keys.length, timeoutMs),
    async stop() {
      const stats = await mapping.stop();
      streams.destroy();
      return { enqueued: keys.length, published: await publishedCount(), relayRuns: stats.invocations };
    },
  };
}

/** The partition of a producer's request item: its case's (a deadline request), else its aggregate's. */
function requestPartition(envelope: Envelope): string {
  const caseId = (envelope.payload as { caseId?: unknown } | undefined)?.caseId;
  return typeof caseId === 'string'
    ? caseItemKey(caseId).PK
    : `${envelope.aggregateType.toUpperCase()}#${envelope.aggregateId}`;
}

/** How many of the events' items are PUBLISHED (consistent reads, 100 keys a call). */
async function countPublished(options: DynamoDemoOutboxOptions, keys: readonly string[]): Promise<number> {
  let published = 0;
  for (let i = 0; i < keys.length; i += 100) {
    const { Responses } = await options.doc.send(
      new BatchGetCommand({
        RequestItems: {
          [options.table]: { Keys: keys.slice(i, i + 100).map(outboxKey), ConsistentRead: true },
        },
      }),
    );
    published += (Responses?.[options.table] ?? []).filter((item) => item.status === 'PUBLISHED').length;
  }
  return published;
}
