import { randomBytes } from 'node:crypto';
import { paginateScan } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { startDropDeletesProxy } from '../../tools/local/drop-deletes-proxy.ts';
import { exampleEnvelope } from '../../tools/local/example-envelope.ts';
import { queueCounts, queueIsEmpty } from '../../tools/local/local-queues.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { startFakeXRayDaemon } from '../support/fake-xray-daemon.ts';
import { localQueueFixture } from './local-queue-fixture.ts';
import { pollerProcesses, waitFor } from './poller-process-fixture.ts';

// The deployable poller (bin/poller.ts as a child process, real signals) on the DynamoDB store: DynamoDB Local and
// fauxqs behind the local IAM layer, every call of the poller evaluated against the task role of the
// `fargate-dynamodb` stage. No database: DATABASE_URL is empty.
const fixture = await localQueueFixture({ store: 'dynamodb' });
const dynamo = useTestDynamoDb();
let dynamodbEndpoint: string;
beforeAll(async () => {
  dynamodbEndpoint = await fixture.frontDynamoDb(dynamo.endpoint);
});
const startPollerProcess = pollerProcesses({
  databaseUrl: '',
  sqsEndpoint: fixture.endpoint,
  environment: { WORKER_STORE: 'dynamodb', POLLER_CONCURRENCY: '10' },
});

const ACCOUNTS = 7;
const payment = (id: string, index: number) =>
  JSON.stringify(
    exampleEnvelope({
      messageType: 'PaymentCaptured',
      idempotencyKey: id,
      aggregateType: 'Payment',
      aggregateId: id,
      payload: { paymentId: id, accountId: `acct-${index % ACCOUNTS}`, amount: 1, currency: 'EUR' },
    }),
  );

/** Every item of `table` whose partition key starts with `prefix` (a consistent scan). */
async function items(table: string, prefix: string): Promise<Record<string, unknown>[]> {
  const found: Record<string, unknown>[] = [];
  for await (const page of paginateScan({ client: dynamo.doc }, { TableName: table, ConsistentRead: true })) {
    found.push(...(page.Items ?? []).filter((item) => String(item.PK).startsWith(prefix)));
  }
  return found;
}

const completedKeys = async (table: string) =>
  (await items(table, 'IDEMP#')).filter((item) => item.status === 'COMPLETED').length;

describe('Poller processes on DynamoDB (bin/poller.ts, WORKER_STORE=dynamodb, real signals)', () => {
  it('two pollers share 1,000 messages (30 % duplicates, crashes between commit and delete); one stopped by SIGTERM mid-run drains and exits 0: one effect per key, nothing lost', async () => {
    // Prepare: 700 payments, 300 of them sent twice, interleaved; the first delivery of every 20th payment is
    // committed but never deleted (a proxy in front of SQS drops its delete, as a crash after the commit would).
    const table = await dynamo.createTable('poller-process');
    const { queueUrl, dlqUrl } = await fixture.queues({
      maxReceiveCount: 5,
      visibilityTimeoutSeconds: 30,
      tableName: table,
    });
    const unique = Array.from({ length: 700 }, (_, i) => payment(`ddb-${i}`, i));
    const bodies = [...unique];
    for (let i = 0; i < 300; i += 1) bodies.splice((i * 7) % bodies.length, 0, unique[i] as string);
    const crashed = new Set(unique.filter((_, i) => i % 20 === 0));
    const proxy = await startDropDeletesProxy({
      upstream: fixture.endpoint,
      shouldDrop: (message) => message.receiveCount === 1 && crashed.has(message.body),
    });
    await fixture.send(queueUrl, bodies);
    const stopTimeoutSeconds = 10;
    const env = {
      SQS_ENDPOINT: proxy.endpoint,
      DYNAMODB_ENDPOINT: dynamodbEndpoint,
      DYNAMODB_TABLE: table,
      POLLER_STOP_TIMEOUT_SECONDS: String(stopTimeoutSeconds),
      // A dropped delete comes back once its lease ends: 4 s after its last renewal.
      POLLER_VISIBILITY_SECONDS: '4',
    };

    // Act: both pollers run; the first gets SIGTERM once a fifth of the keys are applied.
    const first = startPollerProcess(queueUrl, env);
    const second = startPollerProcess(queueUrl, env);
    try {
      await waitFor('a fifth of the keys applied', async () => (await completedKeys(table)) >= 140, 60_000, [
        first,
        second,
      ]);
      const signalledAt = Date.now();
      first.child.kill('SIGTERM');
      const firstExit = await first.exited;
      await waitFor('every key applied', async () => (await completedKeys(table)) === 700, 60_000, [second]);
      await waitFor('the queue drained', () => queueIsEmpty(fixture.sqs, queueUrl), 30_000, [second]);
      second.child.kill('SIGTERM');
      const secondExit = await second.exited;

      // Assess: the stopped poller settled what it held within its stop timeout, and exited 0.
      expect(firstExit.code, first.stderr()).toBe(0);
      expect(firstExit.at - signalledAt).toBeLessThan(stopTimeoutSeconds * 1000);
      expect(first.count('poller_stopping')).toBe(1);
      expect(first.count('poller_stopped')).toBe(1);
      expect(first.count('poller_stop_timed_out')).toBe(0);
      expect(secondExit.code, second.stderr()).toBe(0);
      // Both did work; each key was written once; every duplicate and every redelivery after a crash was skipped.
      const completed = first.count('worker_message_completed') + second.count('worker_message_completed');
      const duplicates = first.count('worker_message_duplicate') + second.count('worker_message_duplicate');
      expect(first.count('worker_message_completed')).toBeGreaterThan(0);
      expect(second.count('worker_message_completed')).toBeGreaterThan(0);
      expect(proxy.dropped).toBeGreaterThan(0);
      expect(completed).toBe(700);
      expect(duplicates).toBeGreaterThanOrEqual(300 + proxy.dropped);
      // The table: one ledger item per payment, each account's balance added to once per payment.
      const ledger = await items(table, 'LEDGER#ddb-');
      expect(ledger).toHaveLength(700);
      const balances = await items(table, 'ACCOUNT#acct-');
      expect(balances.reduce((sum, item) => sum + Number(item.entries), 0)).toBe(700);
      expect(balances.reduce((sum, item) => sum + Number(item.balance), 0)).toBe(700);
      const inbox = await items(table, 'IDEMP#ddb-');
      expect(inbox).toHaveLength(700);
      expect(inbox.every((item) => item.status === 'COMPLETED')).toBe(true);
      expect(await queueCounts(fixture.sqs, dlqUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
    } finally {
      await proxy.stop();
    }
    // Its waits (a fifth applied, every key, the drain) allow 150 s together; the default 60 s would end it first.
  }, 180_000);

  it('with POWERTOOLS_TRACE_ENABLED=true sends the X-Ray daemon beside it one segment per record, sampled by the rule the daemon serves, linked to each producer trace', async () => {
    // Prepare: a stand-in for the task's X-Ray daemon (segments over UDP, the sampling API over HTTP: a rule that
    // samples everything), and payments that each carry a producer trace (W3C traceparent, as the relay sends it).
    const daemon = await startFakeXRayDaemon();
    const table = await dynamo.createTable('poller-tracing');
    const { queueUrl } = await fixture.queues({ visibilityTimeoutSeconds: 30, tableName: table });
    const traced = (id: string, index: number) => {
      const hex = randomBytes(16).toString('hex');
      return {
        traceId: `1-${hex.slice(0, 8)}-${hex.slice(8)}`,
        message: {
          body: payment(id, index),
          attributes: {
            traceparent: { DataType: 'String', StringValue: `00-${hex}-53995c3f42cd8ad8-01` },
          },
        },
      };
    };
    const warmUp = traced('ddb-trace-warm', 0);
    const batch = Array.from({ length: 20 }, (_, i) => traced(`ddb-trace-${i}`, i));
    const poller = startPollerProcess(queueUrl, {
      DYNAMODB_ENDPOINT: dynamodbEndpoint,
      DYNAMODB_TABLE: table,
      POWERTOOLS_TRACE_ENABLED: 'true',
      AWS_XRAY_DAEMON_ADDRESS: daemon.address,
    });
    const segmentOf = (traceId: string) =>
      daemon.segments.filter((segment) => segment.annotations?.producerTraceId === traceId);
    try {
      // Act: the first record starts the SDK's sampler (its rules come from the daemon); the rest follow once served.
      await fixture.send(queueUrl, [warmUp.message]);
      await waitFor(
        'the first segment and the sampling rules served',
        () => segmentOf(warmUp.traceId).length === 1 && daemon.rulesServed > 0,
        30_000,
        [poller],
      );
      await fixture.send(
        queueUrl,
        batch.map((item) => item.message),
      );
      await waitFor(
        'a segment for every record',
        () => batch.every((item) => segmentOf(item.traceId).length > 0),
        30_000,
        [poller],
      );
      poller.child.kill('SIGTERM');
      const exit = await poller.exited;

      // Assess: one closed segment per record, from the ECS container, with the record's outcome and its link
      expect(exit.code, poller.stderr()).toBe(0);
      expect(daemon.segments).toHaveLength(21);
      for (const item of [warmUp, ...batch]) {
        expect(segmentOf(item.traceId)).toEqual([
          expect.objectContaining({
            name: 'case-worker',
            origin: 'AWS::ECS::Container',
            end_time: expect.any(Number),
            annotations: expect.objectContaining({
              producerTraceId: item.traceId,
              result: 'COMPLETED',
              messageType: 'PaymentCaptured',
              messageId: expect.any(String),
            }),
          }),
        ]);
      }
      expect(new Set(daemon.segments.map((segment) => segment.annotations?.messageId)).size).toBe(21);
      expect(poller.count('worker_tracer_unavailable')).toBe(0);
    } finally {
      if (poller.child.exitCode === null) poller.child.kill('SIGKILL');
      await daemon.close();
    }
  });

  it('refuses POLLER_CONCURRENCY above the DynamoDB store’s 10 at start (exit 2, naming it), receiving nothing', async () => {
    // Prepare: a message waiting
    const table = await dynamo.createTable('poller-refusal');
    const { queueUrl } = await fixture.queues({ visibilityTimeoutSeconds: 30, tableName: table });
    await fixture.send(queueUrl, [payment('ddb-refused', 0)]);

    // Act: a pool of 20 would allow 20 PostgreSQL records; DynamoDB's limit is 10 whatever DB_POOL_SIZE says
    const poller = startPollerProcess(queueUrl, {
      DYNAMODB_ENDPOINT: dynamodbEndpoint,
      DYNAMODB_TABLE: table,
      DB_POOL_SIZE: '20',
      POLLER_CONCURRENCY: '11',
    });
    const exit = await poller.exited;

    // Assess
    expect(exit.code, poller.stderr()).toBe(2);
    expect(poller.stderr()).toContain(
      'POLLER_CONCURRENCY must be a whole number from 1 to 10 (given "11"); with WORKER_STORE=dynamodb the poller runs at most 10 records at once',
    );
    expect(await queueCounts(fixture.sqs, queueUrl)).toMatchObject({ visible: 1, inFlight: 0 });
    expect(await items(table, 'IDEMP#')).toEqual([]);
  });
});
