import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, it } from 'vitest';
import {
  balanceItemKey,
  exampleDynamoHandlers,
  paymentCapturedDynamo,
} from '../../lambda/domain/dynamodb/index.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import { createDynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import { defineDynamoHandler } from '../../lambda/stores/dynamodb/index.ts';
import { QUARANTINE_PK_PREFIX } from '../../lambda/stores/dynamodb/item-keys.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { checkHostileBatches, lambdaRuntime, type PropertyStore } from '../support/hostile-batch-property.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';

// The hostile-batch property (test/support/hostile-batch-property.ts) on DynamoDB Local, through the Lambda adapter
// (createWorker) in one warm execution environment per run. `npm run soak:property` runs it longer.

const dynamo = useTestDynamoDb();
let table: string;
let proxy: TcpProxy;
beforeAll(async () => {
  table = await dynamo.createTable('property');
  const target = new URL(dynamo.endpoint);
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
  return () => proxy.close();
});

const TIMEOUT_MS = 3_000;

/** The example payment, but its first delivery waits on a slow call longer than the whole invocation has. */
const slowPaymentDynamo = defineDynamoHandler({
  ...paymentCapturedDynamo,
  messageType: 'SlowPayment',
  async handle(context) {
    if (context.record.attributes.ApproximateReceiveCount === '1') await sleep(TIMEOUT_MS + 1_000);
    return paymentCapturedDynamo.handle(context);
  },
});

const dynamoStore: PropertyStore = {
  types: { payment: 'PaymentCaptured', slowPayment: 'SlowPayment' },
  async environment(onOutcome) {
    // The worker reaches DynamoDB through the proxy; the test's own reads do not.
    const client = new DynamoDBClient({
      endpoint: `http://127.0.0.1:${proxy.port}`,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });
    const handler = createWorker({
      consumer: 'case-worker',
      handlers: [...exampleDynamoHandlers, slowPaymentDynamo],
      store: createDynamoStore({ client, tableName: table }),
      recordConcurrency: 10,
      logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
      metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
      onOutcome,
    });
    return { handler, close: async () => client.destroy() };
  },
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

describe('Property: hostile batches on DynamoDB', () => {
  it('never throws nor hangs, applies every good message once, quarantines every bad one', async () => {
    await checkHostileBatches(dynamoStore, lambdaRuntime(TIMEOUT_MS));
  }, 600_000);
});
