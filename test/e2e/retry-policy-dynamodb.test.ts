import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { defineDynamoHandler } from '../../lambda/stores/dynamodb/dynamo-handler.ts';
import { createDynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import { inboxKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import type { RecordOutcome } from '../../lambda/worker/outcome.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { localQueueFixture } from './local-queue-fixture.ts';
import { expectDelay, failOnce, partnerCallHandler, scenarioWorker } from './retry-policy-scenario.ts';

process.env.POWERTOOLS_METRICS_DISABLED = 'true';

// The scenario of retry-policy.test.ts on the DynamoDB store: the worker's table calls with its role, through the
// local IAM layer in front of DynamoDB Local.
const fixture = await localQueueFixture({ store: 'dynamodb' });
const dynamo = useTestDynamoDb();
let table = '';
beforeAll(async () => {
  await fixture.frontDynamoDb(dynamo.endpoint);
  table = await dynamo.createTable('retry-policy');
  // The deployment of the table (its grants are scoped to it): a bucket bound beside it.
  await fixture.bucket(undefined, { tableName: table });
});

const partnerCall = defineDynamoHandler(partnerCallHandler);

/** Made per delivery, after `beforeAll` created the table. */
const worker = (outcomes: RecordOutcome[]) =>
  scenarioWorker(fixture, {
    handlers: [partnerCall],
    store: createDynamoStore({ client: fixture.dynamodbAs('worker'), tableName: table }),
  })(outcomes);

const inboxItem = async (key: string) =>
  (
    await dynamo.doc.send(
      new GetCommand({ TableName: table, Key: inboxKey('case-worker', key), ConsistentRead: true }),
    )
  ).Item;

describe('Retry policy per failure code through the engine (DynamoDB, local SQS)', () => {
  it("sets the visibility of its code's policy, and the delay its handler asked for", async () => {
    // Act: PARTNER_DOWN=3:3; PARTNER_RATE_LIMITED=1:6 with a Retry-After of 4 s.
    const byPolicy = await failOnce(fixture, worker, { code: 'PARTNER_DOWN' });
    const byHandler = await failOnce(fixture, worker, { code: 'PARTNER_RATE_LIMITED', retryAfter: '4' });

    // Assess
    expectDelay(byPolicy, 3, 'policy');
    expectDelay(byHandler, 4, 'handler');
    expect(await inboxItem(byPolicy.idempotencyKey)).toMatchObject({
      status: 'FAILED_RETRYABLE',
      failureCode: 'PARTNER_DOWN',
    });
    expect(await inboxItem(byHandler.idempotencyKey)).toMatchObject({ failureCode: 'PARTNER_RATE_LIMITED' });
  });
});
