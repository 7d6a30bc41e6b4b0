import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimDynamoInbox } from '../../lambda/stores/dynamodb/claim-dynamo-inbox.ts';
import { createDynamoStore } from '../../lambda/stores/dynamodb/index.ts';
import { requestHash } from '../../lambda/worker/request-hash.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { envelopeFactory } from '../support/sqs-event.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';

const dynamo = useTestDynamoDb();
let table: string;
let proxy: TcpProxy;
let client: DynamoDBClient;

beforeAll(async () => {
  table = await dynamo.createTable('claim-abort');
  const target = new URL(dynamo.endpoint);
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
  client = new DynamoDBClient({
    endpoint: `http://127.0.0.1:${proxy.port}`,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
});
afterAll(async () => {
  client?.destroy();
  await proxy?.close();
});

describe('The DynamoDB gate under a record deadline', () => {
  it("gives up its claim when the record's signal aborts, however long DynamoDB stays silent", async () => {
    // Prepare: DynamoDB reachable, then a black hole (requests sent, no answer ever)
    const store = createDynamoStore({ client, tableName: table });
    const envelope = envelopeFactory({});
    const entry = {
      consumer: 'case-worker',
      envelope,
      requestHash: requestHash({
        messageType: envelope.messageType,
        schemaVersion: envelope.schemaVersion,
        payload: envelope.payload,
      }),
      sqsMessageId: 'm-1',
    };
    proxy.stall();
    const deadline = new AbortController();

    // Act: the deadline passes while the claim waits
    const claim = claimDynamoInbox(store, entry, {
      nowMs: Date.now(),
      leaseMs: 60_000,
      signal: deadline.signal,
    });
    const settled = claim.then(
      () => 'claimed',
      (error: Error) => error.name,
    );
    deadline.abort();
    // A hang guard only: without the signal the claim waits for the stalled socket, which never answers.
    const outcome = await Promise.race([
      settled,
      new Promise((resolve) => setTimeout(resolve, 30_000, 'hung')),
    ]);
    proxy.up();

    // Assess
    expect(outcome).toBe('AbortError');
  }, 60_000);
});
