import { createHash } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { TerminalError } from '../../../../lambda/errors.ts';
import { createWorker } from '../../../../lambda/runtimes/lambda/create-worker.ts';
import { defineDynamoHandler } from '../../../../lambda/stores/dynamodb/dynamo-handler.ts';
import { createDynamoStore } from '../../../../lambda/stores/dynamodb/dynamo-store.ts';
import { inboxKey, quarantineKey } from '../../../../lambda/stores/dynamodb/item-keys.ts';
import { startEventSourceMapping } from '../../../../tools/local/event-source-mapping.ts';
import { systemClock } from '../../../../tools/ops/clock.ts';
import { dlqCanaryRedrive } from '../../../../tools/ops/dlq-canary-redrive.ts';
import { FailedChecksError } from '../../../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../../../tools/ops/memory-output.ts';
import { dynamoOpsStore } from '../../../../tools/ops/stores/dynamodb/index.ts';
import { dynamoProcessor } from '../../../support/dynamo-processor.ts';
import { useTestDynamoDb } from '../../../support/dynamodb.ts';
import { sqsRecordFactory } from '../../../support/sqs-event.ts';
import { createQueues, depth, paymentEnvelope, sendAll, startOpsSqs } from '../../ops-fixture.ts';

// The canary redrive on the DynamoDB store: DynamoDB Local, fauxqs and the real worker behind the local event source
// mapping, with a payment handler that refuses closed accounts until "fixed".
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
const dynamo = useTestDynamoDb();
const { sqs } = await startOpsSqs();

/** Whether the handler still rejects the payments (the fix not deployed yet). */
let rejecting = true;
const payments = defineDynamoHandler({
  messageType: 'PaymentCaptured',
  schemaVersion: 1,
  payload: z.object({
    paymentId: z.string(),
    accountId: z.string(),
    amount: z.string(),
    currency: z.string(),
  }),
  async handle() {
    if (rejecting) throw new TerminalError('ACCOUNT_CLOSED', 'the account is closed');
    return { writes: [] };
  },
});

/** `count` payments the store failed ACCOUNT_CLOSED (inbox and quarantine items) whose copies reached the DLQ. */
async function failedPayments(count: number, base: number) {
  const table = await dynamo.createTable('canary');
  const store = dynamoOpsStore({ target: () => ({ doc: dynamo.doc, tableName: table }) });
  const queues = await createQueues(sqs);
  const envelopes = Array.from({ length: count }, (_, i) => paymentEnvelope(base + i));
  const process = dynamoProcessor(dynamo, table, [payments]);
  const before = rejecting;
  rejecting = true;
  for (const envelope of envelopes) await process(sqsRecordFactory(envelope));
  rejecting = before;
  await sendAll(sqs, queues.dlqUrl, envelopes);
  const esm = await startEventSourceMapping({
    sqs,
    queueUrl: queues.queueUrl,
    handler: createWorker({
      consumer: 'case-worker',
      handlers: [payments],
      store: createDynamoStore({ client: dynamo.newClient(), tableName: table }),
      sqs,
      backoff: { baseSeconds: 1, maxSeconds: 1 },
      logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
      metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
    }),
    batchSize: 10,
    waitTimeSeconds: 1,
    functionTimeoutMs: 10_000,
  });
  const get = async (Key: ReturnType<typeof inboxKey>) =>
    (await dynamo.doc.send(new GetCommand({ TableName: table, Key, ConsistentRead: true }))).Item;
  const inbox = (key: string) => get(inboxKey('case-worker', key));
  const quarantine = (body: string) =>
    get(quarantineKey('case-worker', createHash('sha256').update(body).digest('hex')));
  const audits = async () =>
    ((await dynamo.doc.send(new ScanCommand({ TableName: table, ConsistentRead: true }))).Items ?? []).filter(
      (item) => String(item.PK).startsWith('AUDIT#') && item.sourceQueue === queues.dlqUrl,
    );
  return { ...queues, store, envelopes, esm, inbox, quarantine, audits };
}

const stop = (fixture: Awaited<ReturnType<typeof failedPayments>>) =>
  fixture.esm.drain({ timeoutMs: 20_000 }).then(() => fixture.esm.stop());

const options = (queues: { dlqUrl: string; queueUrl: string }) => ({
  dlqUrl: queues.dlqUrl,
  queueUrl: queues.queueUrl,
  consumer: 'case-worker',
  ratePerSecond: 100,
  waitSeconds: 0,
  roundTimeoutMs: 20_000,
  pollMs: 100,
});

describe('Function: dlqCanaryRedrive() on the DynamoDB store', () => {
  it('drains the DLQ round by round while every canary succeeds', async () => {
    // Prepare: the fix is deployed
    rejecting = false;
    const fixture = await failedPayments(5, 700);
    const out = createMemoryOutput({ json: true });

    // Act
    const result = await dlqCanaryRedrive(
      { store: fixture.store, sqs, out, clock: systemClock },
      { ...options(fixture), canary: 2, watch: true },
    ).finally(() => stop(fixture));

    // Assess: rounds of 2, 2 and the last 1
    expect(result.rounds.map((r) => r.moves.length)).toEqual([2, 2, 1]);
    expect(result).toMatchObject({ moved: 5, succeeded: 5, failed: 0, stoppedBy: 'drained' });
    expect(out.lastJson<{ stoppedBy: string }>().stoppedBy).toBe('drained');
    expect(await depth(sqs, fixture.dlqUrl)).toEqual({ visible: 0, inFlight: 0 });
    expect(await depth(sqs, fixture.queueUrl)).toEqual({ visible: 0, inFlight: 0 });
    for (const envelope of fixture.envelopes) {
      expect((await fixture.inbox(envelope.idempotencyKey))?.status).toBe('COMPLETED');
    }
    expect((await fixture.audits()).map((item) => item.outcome)).toEqual(Array(5).fill('DONE'));
  });

  it('stops after the first round when its canaries fail again, leaving the rest in the DLQ (exit 1)', async () => {
    // Prepare: the handler still rejects them
    rejecting = true;
    const fixture = await failedPayments(4, 800);
    const out = createMemoryOutput();

    // Act
    const error = await dlqCanaryRedrive(
      { store: fixture.store, sqs, out, clock: systemClock },
      { ...options(fixture), canary: 1, watch: true },
    )
      .then(
        () => undefined,
        (caught: unknown) => caught,
      )
      .finally(() => stop(fixture));

    // Assess
    expect(error).toBeInstanceOf(FailedChecksError);
    expect(out.stdout()).toMatch(/Round 1: 1 message\(s\) redriven, 0 key\(s\) succeeded, 1 did not\./);
    expect(out.stdout()).toMatch(/│ failed +│ FAILED_TERMINAL +│ ACCOUNT_CLOSED/);
    expect(await depth(sqs, fixture.dlqUrl)).toEqual({ visible: 3, inFlight: 0 });
    expect(await depth(sqs, fixture.queueUrl)).toEqual({ visible: 0, inFlight: 0 });
    // The canary was quarantined a second time; the three left in the DLQ once, as before.
    const occurrences: number[] = [];
    for (const envelope of fixture.envelopes) {
      expect((await fixture.inbox(envelope.idempotencyKey))?.status).toBe('FAILED_TERMINAL');
      occurrences.push(Number((await fixture.quarantine(JSON.stringify(envelope)))?.occurrences));
    }
    expect(occurrences.sort()).toEqual([1, 1, 1, 2]);
    expect((await fixture.audits()).map((item) => item.outcome)).toEqual(['DONE']);
  });
});
