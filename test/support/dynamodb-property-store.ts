import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import {
  balanceItemKey,
  exampleDynamoHandlers,
  paymentCapturedDynamo,
} from '../../lambda/domain/dynamodb/index.ts';
import { createBatchEngine } from '../../lambda/runtimes/create-batch-engine.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import type { WorkerOptions } from '../../lambda/runtimes/worker-options.ts';
import { defineDynamoHandler } from '../../lambda/stores/dynamodb/dynamo-handler.ts';
import { createDynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import { QUARANTINE_PK_PREFIX } from '../../lambda/stores/dynamodb/item-keys.ts';
import { probeDynamoStore } from '../../lambda/stores/dynamodb/probe-dynamo-store.ts';
import type { PollerEngineSource } from './deliver-through-poller.ts';
import type { TestDynamoDb } from './dynamodb.ts';
import type { PropertyStore } from './hostile-batch-property.ts';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.ts';

/** Records a DynamoDB worker of a property run processes at once (the store's limit). */
const RECORD_CONCURRENCY = 10;

/** The DynamoDB store of a property run, for the Lambda runtime and for the poller. */
export type DynamoPropertyStore = PropertyStore &
  PollerEngineSource & {
    readonly proxy: TcpProxy;
    /** Closes the proxy and the probe's client. */
    close(): Promise<void>;
  };

/**
 * DynamoDB Local for the hostile-batch property: a fresh table, the worker reaching DynamoDB through a TCP proxy the
 * run can stall (a black hole in front of the endpoint), the test's reads not. `budgetMs` is what a record gets (the
 * Lambda timeout, the poller's batch budget): the slow payment's first delivery sleeps past it. The poller's probe is
 * the store's own (`probeDynamoStore`, a GetItem through the proxy).
 */
export async function dynamoPropertyStore(
  dynamo: TestDynamoDb,
  budgetMs: number,
): Promise<DynamoPropertyStore> {
  const table = await dynamo.createTable('property');
  const target = new URL(dynamo.endpoint);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
  /** The example payment, but its first delivery waits on a slow call longer than the whole budget. */
  const slowPaymentDynamo = defineDynamoHandler({
    ...paymentCapturedDynamo,
    messageType: 'SlowPayment',
    async handle(context) {
      if (context.record.attributes.ApproximateReceiveCount === '1') await sleep(budgetMs + 1_000);
      return paymentCapturedDynamo.handle(context);
    },
  });
  // The worker reaches DynamoDB through the proxy; the test's own reads do not.
  const workerClient = () =>
    new DynamoDBClient({
      endpoint: `http://127.0.0.1:${proxy.port}`,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });
  const options = (client: DynamoDBClient): WorkerOptions => ({
    consumer: 'case-worker',
    handlers: [...exampleDynamoHandlers, slowPaymentDynamo],
    store: createDynamoStore({ client, tableName: table }),
    recordConcurrency: RECORD_CONCURRENCY,
    backoff: { baseSeconds: 1, maxSeconds: 1 },
    logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
    metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
  });
  const probeClient = workerClient();
  const probeStore = createDynamoStore({ client: probeClient, tableName: table });
  return {
    proxy,
    async close() {
      probeClient.destroy();
      await proxy.close();
    },
    types: { payment: 'PaymentCaptured', slowPayment: 'SlowPayment' },
    async environment(onOutcome) {
      const client = workerClient();
      const handler = createWorker({ ...options(client), onOutcome });
      return { handler, close: async () => client.destroy() };
    },
    engine({ onOutcome, onRecordSettled }) {
      const client = workerClient();
      const engine = createBatchEngine({ ...options(client), onOutcome, onRecordSettled });
      return { engine, concurrency: RECORD_CONCURRENCY, close: async () => client.destroy() };
    },
    probe: () => probeDynamoStore(probeStore, 'case-worker', 500),
    async effects(message) {
      // Every payment has its own account: the balance item counts the additions (a double effect adds twice).
      const { Item } = await dynamo.doc.send(
        new GetCommand({
          TableName: table,
          Key: balanceItemKey(message.accountId ?? '', 'EUR'),
          ConsistentRead: true,
        }),
      );
      return Number(Item?.entries ?? 0);
    },
    async quarantineCodes(hash) {
      const { Items = [] } = await dynamo.doc.send(
        new QueryCommand({
          TableName: table,
          KeyConditionExpression: 'PK = :pk',
          ExpressionAttributeValues: { ':pk': `${QUARANTINE_PK_PREFIX}${hash}` },
          ConsistentRead: true,
        }),
      );
      return Items.map((item) => String(item.reasonCode));
    },
    stall: () => proxy.stall(),
    restore: () => proxy.up(),
  };
}
