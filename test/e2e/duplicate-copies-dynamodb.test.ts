import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { createDynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import { inboxKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import { systemClock } from '../../tools/ops/clock.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { dynamoInboxHot } from '../../tools/ops/stores/dynamodb/dynamo-inbox-hot.ts';
import { dynamoInboxStats } from '../../tools/ops/stores/dynamodb/dynamo-inbox-stats.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { caseStageEnvelope } from '../support/sqs-event.ts';
import { exampleDynamoWorker } from '../support/test-worker.ts';
import {
  expectRedeliveryThenResend,
  injectRedeliveryAndResend,
  printingTelemetry,
} from './duplicate-copies-scenario.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

const fixture = await localQueueFixture({ store: 'dynamodb' });
const dynamo = useTestDynamoDb();
let table: string;
beforeAll(async () => {
  await fixture.frontDynamoDb(dynamo.endpoint);
  table = await dynamo.createTable('duplicates');
});

describe('Duplicates told apart on DynamoDB: redelivery (same messageId) or resend (new messageId)', () => {
  it('counts a redelivery after a crash before delete and a resend, in metrics, item and stats', async () => {
    // Prepare
    const envelope = caseStageEnvelope('CASE-DUP-1', 1);
    const store = createDynamoStore({ client: fixture.dynamodbAs('worker'), tableName: table });
    const handler = exampleDynamoWorker(store, printingTelemetry());

    // Act
    const seen = await injectRedeliveryAndResend({
      fixture,
      sqs: fixture.as('worker').sqs,
      handler,
      body: JSON.stringify(envelope),
      tableName: table,
      visibilityTimeoutSeconds: 3, // DynamoDB Local's first calls are slow: the first delivery must end before it
    });

    // Assess: EMF and log lines
    expectRedeliveryThenResend(seen);
    // Assess: the counters on the item
    const { Item } = await dynamo.doc.send(
      new GetCommand({
        TableName: table,
        Key: inboxKey('case-worker', envelope.idempotencyKey),
        ConsistentRead: true,
      }),
    );
    expect(Item).toMatchObject({ status: 'COMPLETED', attempts: 1, redeliveryCount: 1, resendCount: 1 });
    // Assess: inbox stats and inbox hot (a bounded Scan)
    const target = { doc: dynamo.doc, tableName: table };
    const out = createMemoryOutput();
    const stats = await dynamoInboxStats(
      { dynamo: target, out, clock: systemClock },
      { consumer: 'case-worker' },
    );
    expect(stats.duplicates).toEqual({ redeliveries: 1, resends: 1, keysRedelivered: 1 });
    expect(stats.deliveriesLastHour).toEqual({ keys: 1, maxPerKey: 3, avgPerKey: 3, keysSeenAgain: 1 });
    expect(out.stdout()).toContain(
      'Duplicates kept on the inbox: 1 redeliveries (the same SQS message again, on 1 keys), 1 resends (a new message, same key)',
    );
    const hotOut = createMemoryOutput();
    const hot = await dynamoInboxHot(
      { dynamo: target, out: hotOut, clock: systemClock },
      { consumer: 'case-worker', limit: 10, sinceSeconds: 3600, scanLimit: 1000 },
    );
    expect(hot.aggregates).toEqual([
      { aggregateType: 'case', aggregateId: 'CASE-DUP-1', keys: 1, retries: 2, inFlight: 0, lockWaits: 0 },
    ]);
    expect(hot.scan?.complete).toBe(true);
    expect(hotOut.stdout()).toContain('Scanned the whole table');
  });

  it('says the answer of inbox hot is partial when the Scan stops at its bound', async () => {
    // Act
    const out = createMemoryOutput();
    const hot = await dynamoInboxHot(
      { dynamo: { doc: dynamo.doc, tableName: table }, out, clock: systemClock },
      { consumer: 'case-worker', limit: 10, sinceSeconds: 3600, scanLimit: 1 },
    );

    // Assess
    expect(hot.scan).toEqual({ items: 1, complete: false });
    expect(out.stdout()).toContain(
      'Partial: the Scan stopped at its bound after 1 items (raise --scan-limit).',
    );
  });
});
