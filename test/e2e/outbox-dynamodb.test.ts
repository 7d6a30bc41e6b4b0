import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { SendMessageBatchCommand, SendMessageBatchCommandOutput } from '@aws-sdk/client-sqs';
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { InvalidOutboxEnvelopeError } from '../../lambda/outbox/errors.ts';
import type { OutboxSqsSender } from '../../lambda/outbox/send-outbox-rows.ts';
import { dynamoOutboxWrite } from '../../lambda/stores/dynamodb/dynamo-outbox-write.ts';
import { createDynamoStore, type DynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import { outboxKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import { matchesOutboxStreamFilter } from '../../lambda/stores/dynamodb/outbox-stream-filter.ts';
import { relayDynamoOutbox } from '../../lambda/stores/dynamodb/relay-dynamo-outbox.ts';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import { startDynamoStreamMapping } from '../../tools/local/dynamodb-stream-mapping.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { caseStageEnvelope } from '../support/sqs-event.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

process.env.POWERTOOLS_METRICS_DISABLED = 'true';

// The DynamoDB outbox end to end: producers' transactions on DynamoDB Local, its stream read by the local stream
// mapping (tools/local/dynamodb-stream-mapping.ts, the event source mapping's rules), the relay function's code on the
// relay's role (its table calls and its sends through the local IAM layer), fauxqs as the queue.
const fixture = await localQueueFixture({ store: 'dynamodb' });
const dynamo = useTestDynamoDb();
beforeAll(() => fixture.frontDynamoDb(dynamo.endpoint));

const SECRET = 'payload-secret-4711';

interface Setup {
  readonly table: string;
  readonly queueUrl: string;
  readonly store: DynamoStore;
  readonly logs: string[];
  /** Runs the relay on the table's stream until it caught up; what the mapping did. */
  relay(sqs?: OutboxSqsSender): Promise<{ invocations: number; retries: number; recordsGivenUp: number }>;
}

async function setup(): Promise<Setup> {
  const table = await dynamo.createTable('outbox');
  const streamArn = await dynamo.streamArn(table);
  const { queueUrl } = await fixture.queues({ tableName: table });
  const store = createDynamoStore({ client: fixture.dynamodbAs('relay'), tableName: table });
  const logs: string[] = [];
  const logger = new Logger({ serviceName: 'outbox-relay', logLevel: 'INFO' });
  for (const level of ['info', 'warn', 'error'] as const) {
    logger[level] = ((message: string, extra?: unknown) => {
      logs.push(`${message} ${JSON.stringify(extra ?? {})}`);
    }) as never;
  }
  const metrics = new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'outbox-relay' });
  const streams = new DynamoDBStreamsClient({
    endpoint: dynamo.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  return {
    table,
    queueUrl,
    store,
    logs,
    async relay(sqs = fixture.as('relay').sqs) {
      const mapping = startDynamoStreamMapping({
        streams,
        streamArn,
        filter: (record) => matchesOutboxStreamFilter(record as never),
        handler: (event) =>
          relayDynamoOutbox(event.Records as never, { store, sqs, queueUrl, logger, metrics }),
        retryMs: 20,
      });
      try {
        await mapping.drain({ timeoutMs: 60_000 });
      } finally {
        await mapping.stop();
      }
      return mapping.stop(); // stopped already: its figures
    },
  };
}

const event = (caseId: string, version: number): Envelope =>
  caseStageEnvelope(caseId, version, { stage: `STAGE_${version}`, note: SECRET });

/** The producer's transaction: the case item and its event, or a failed condition that cancels both. */
async function produce(table: string, envelope: Envelope, options: { fail?: boolean } = {}) {
  const { item } = await dynamoOutboxWrite(table, envelope);
  const caseId = envelope.aggregateId;
  await dynamo.doc.send(
    new TransactWriteCommand({
      TransactItems: [
        {
          Put: {
            TableName: table,
            Item: {
              PK: `CASE#${caseId}`,
              SK: `V#${envelope.payload && (envelope.payload as { version: number }).version}`,
            },
            ...(options.fail ? { ConditionExpression: 'attribute_exists(PK)' } : {}),
          },
        },
        item,
      ],
    }),
  );
}

/** A real SQS client that fails the calls `fail` selects and records the keys it sent. */
function failingSender(
  fail: (call: number, keys: string[]) => boolean,
): OutboxSqsSender & { sent: string[] } {
  const real = fixture.as('relay').sqs;
  const sent: string[] = [];
  let calls = 0;
  return {
    sent,
    async send(command: SendMessageBatchCommand): Promise<SendMessageBatchCommandOutput> {
      const keys = (command.input.Entries ?? []).map((e) => JSON.parse(e.MessageBody ?? '{}').idempotencyKey);
      if (fail(calls++, keys)) throw new Error('injected: SendMessageBatch failed');
      sent.push(...keys);
      return real.send(command);
    },
  };
}

const outboxItem = async (table: string, key: string) =>
  (await dynamo.doc.send(new GetCommand({ TableName: table, Key: outboxKey(key), ConsistentRead: true })))
    .Item;

describe('The DynamoDB outbox: dynamoOutboxWrite in the producer transaction, relayed from the stream', () => {
  it('publishes the event of a committed transaction once, with its trace, and nothing of a cancelled one', async () => {
    // Prepare
    const run = await setup();
    const committed = event(`C-${randomUUID()}`, 1);
    const cancelled = event(`C-${randomUUID()}`, 1);
    await produce(run.table, committed);
    await expect(produce(run.table, cancelled, { fail: true })).rejects.toBeInstanceOf(
      TransactionCanceledException,
    );

    // Act
    await run.relay();

    // Assess: one message, the committed event's body; its item PUBLISHED with the SQS message id.
    const messages = await fixture.receiveAll(run.queueUrl);
    expect(messages.map((m) => JSON.parse(m.body).idempotencyKey)).toEqual([committed.idempotencyKey]);
    expect(JSON.parse(messages[0]?.body ?? '{}')).toEqual(committed);
    const item = await outboxItem(run.table, committed.idempotencyKey);
    expect(item).toMatchObject({ status: 'PUBLISHED', sqsMessageId: messages[0]?.messageId });
    expect(typeof item?.ttl).toBe('number');
    expect(await outboxItem(run.table, cancelled.idempotencyKey)).toBeUndefined();
    expect(run.logs.join('\n')).not.toContain(SECRET);
  });

  it('leaves the item as it is for the same event again, and cancels a transaction that reuses its key for another', async () => {
    // Prepare
    const run = await setup();
    const first = event(`C-${randomUUID()}`, 1);
    await produce(run.table, first);
    await run.relay();
    const before = await outboxItem(run.table, first.idempotencyKey);

    // Act: the same event with a new messageId (a producer retrying its command); then another event under its key.
    await produce(run.table, { ...first, messageId: randomUUID() });
    const other = { ...event(first.aggregateId, 2), idempotencyKey: first.idempotencyKey };
    const conflict = await produce(run.table, other).catch((error: unknown) => error);
    await run.relay();

    // Assess
    expect(conflict).toBeInstanceOf(TransactionCanceledException);
    expect((conflict as TransactionCanceledException).CancellationReasons?.[1]?.Code).toBe(
      'ConditionalCheckFailed',
    );
    expect(await outboxItem(run.table, first.idempotencyKey)).toEqual(before);
    expect((await fixture.receiveAll(run.queueUrl)).map((m) => m.body)).toEqual([JSON.stringify(first)]);
  });

  it('retries a failed send from the failure: every event once, each aggregate in order, none lost', async () => {
    // Prepare: three aggregates, three events each, in one batch; the first send of A's second event fails twice.
    const run = await setup();
    const aggregates = [`A-${randomUUID()}`, `B-${randomUUID()}`, `C-${randomUUID()}`];
    const events = [1, 2, 3].flatMap((version) => aggregates.map((id) => event(id, version)));
    for (const envelope of events) await produce(run.table, envelope);
    const target = event(aggregates[0] as string, 2).idempotencyKey;
    let failures = 0;
    const sender = failingSender((_call, keys) => keys.includes(target) && failures++ < 2);

    // Act
    const stats = await run.relay(sender);

    // Assess: each key on the queue once; per aggregate, versions in order; the mapping retried from the failure.
    const bodies = (await fixture.receiveAll(run.queueUrl)).map((m) => JSON.parse(m.body) as Envelope);
    expect(bodies.map((b) => b.idempotencyKey).sort()).toEqual(events.map((e) => e.idempotencyKey).sort());
    for (const id of aggregates) {
      const versions = sender.sent.filter((key) => key.startsWith(`case:${id}:`));
      expect(versions).toEqual([1, 2, 3].map((v) => event(id, v).idempotencyKey));
    }
    expect(stats.retries).toBe(2);
    expect(stats.recordsGivenUp).toBe(0);
    for (const envelope of events) {
      expect(await outboxItem(run.table, envelope.idempotencyKey)).toMatchObject({ status: 'PUBLISHED' });
    }
    // Its round's call failed twice (each entry of the call logged), and nothing was given up.
    const failed = run.logs.filter((line) => line.startsWith('outbox_send_failed'));
    expect(failed.filter((line) => line.includes(target))).toHaveLength(2);
  });

  it('refuses an envelope larger than an outbox item holds, naming the limit and the fix', async () => {
    // Prepare
    const big = caseStageEnvelope(`C-${randomUUID()}`, 1, { note: 'x'.repeat(400_000) });

    // Act
    const refused = await dynamoOutboxWrite('any-table', big).catch((error: unknown) => error);

    // Assess
    expect(refused).toBeInstanceOf(InvalidOutboxEnvelopeError);
    expect((refused as Error).message).toMatch(/above an outbox item's limit of 380000 bytes/);
    expect((refused as Error).message).toMatch(/pass `offload`/);
  });
});
