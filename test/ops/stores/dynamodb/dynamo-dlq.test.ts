import type { SQSClient } from '@aws-sdk/client-sqs';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { TerminalError } from '../../../../lambda/errors.ts';
import { defineDynamoHandler } from '../../../../lambda/stores/dynamodb/dynamo-handler.ts';
import { inboxKey } from '../../../../lambda/stores/dynamodb/item-keys.ts';
import { dlqPeek } from '../../../../tools/ops/dlq-peek.ts';
import { dlqRedrive } from '../../../../tools/ops/dlq-redrive.ts';
import { OperationError } from '../../../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../../../tools/ops/memory-output.ts';
import { dynamoInboxShow } from '../../../../tools/ops/stores/dynamodb/dynamo-inbox-show.ts';
import { dynamoOpsStore } from '../../../../tools/ops/stores/dynamodb/index.ts';
import { dynamoProcessor } from '../../../support/dynamo-processor.ts';
import { useTestDynamoDb } from '../../../support/dynamodb.ts';
import { sqsRecordFactory } from '../../../support/sqs-event.ts';
import { createQueues, depth, fastClock, paymentEnvelope, sendAll, startOpsSqs } from '../../ops-fixture.ts';

const dynamo = useTestDynamoDb();
const { sqs } = await startOpsSqs();
let table: string;
let store: ReturnType<typeof dynamoOpsStore>;

// A payment handler that refuses closed accounts terminally and applies the others: the inbox items below are
// written by the store itself.
const payments = defineDynamoHandler({
  messageType: 'PaymentCaptured',
  schemaVersion: 1,
  payload: z.object({
    paymentId: z.string(),
    accountId: z.string(),
    amount: z.string(),
    currency: z.string(),
  }),
  async handle({ payload }) {
    if (payload.accountId === 'ACC-CLOSED')
      throw new TerminalError('ACCOUNT_CLOSED', 'the account is closed');
    return { writes: [] };
  },
});
const closed = (index: number) =>
  paymentEnvelope(index, {
    payload: { paymentId: `PAY-D-${index}`, accountId: 'ACC-CLOSED', amount: '10.50', currency: 'EUR' },
  });

beforeAll(async () => {
  table = await dynamo.createTable('dlq');
  store = dynamoOpsStore({ target: () => ({ doc: dynamo.doc, tableName: table }) });
});

const inboxItem = async (key: string) =>
  (
    await dynamo.doc.send(
      new GetCommand({ TableName: table, Key: inboxKey('case-worker', key), ConsistentRead: true }),
    )
  ).Item;
const auditItems = async (dlqUrl: string) =>
  ((await dynamo.doc.send(new ScanCommand({ TableName: table, ConsistentRead: true }))).Items ?? []).filter(
    (item) => String(item.PK).startsWith('AUDIT#') && item.sourceQueue === dlqUrl,
  );

describe('Function: dlqPeek() on the DynamoDB store', () => {
  it("joins each DLQ message with its key's inbox item and groups them by failure", async () => {
    // Prepare: two terminal failures and one completed payment, processed by the store; one key never seen.
    const process = dynamoProcessor(dynamo, table, [payments]);
    const failed = [closed(1), closed(2)];
    const done = paymentEnvelope(3);
    const unseen = paymentEnvelope(4);
    for (const envelope of [...failed, done]) await process(sqsRecordFactory(envelope));
    const { dlqUrl } = await createQueues(sqs);
    await sendAll(sqs, dlqUrl, [...failed, done, unseen]);

    // Act
    const result = await dlqPeek(
      { store, sqs, out: createMemoryOutput({ json: true }) },
      { dlqUrl, consumer: 'case-worker', max: 10, waitSeconds: 0 },
    );

    // Assess
    expect(result.peeked).toBe(4);
    expect(result.groups).toEqual([
      {
        messageType: 'PaymentCaptured',
        code: 'ACCOUNT_CLOSED',
        count: 2,
        sampleKeys: failed.map((e) => e.idempotencyKey),
      },
      { messageType: 'PaymentCaptured', code: 'COMPLETED', count: 1, sampleKeys: [done.idempotencyKey] },
      { messageType: 'PaymentCaptured', code: 'NO_INBOX_ROW', count: 1, sampleKeys: [unseen.idempotencyKey] },
    ]);
    expect(result.messages.find((m) => m.idempotencyKey === failed[0]?.idempotencyKey)).toMatchObject({
      inboxStatus: 'FAILED_TERMINAL',
      inboxAttempts: 1,
    });
    expect(await depth(sqs, dlqUrl)).toEqual({ visible: 4, inFlight: 0 });
  });
});

describe('Function: dlqRedrive() on the DynamoDB store', () => {
  it('re-arms a terminal key, moves its message, leaves a completed key alone, and audits each move', async () => {
    // Prepare
    const process = dynamoProcessor(dynamo, table, [payments]);
    const failed = closed(10);
    const done = paymentEnvelope(11);
    for (const envelope of [failed, done]) await process(sqsRecordFactory(envelope));
    const { queueUrl, dlqUrl } = await createQueues(sqs);
    await sendAll(sqs, dlqUrl, [failed, done]);

    // Act
    const result = await dlqRedrive(
      { store, sqs, out: createMemoryOutput({ json: true }), clock: fastClock() },
      { dlqUrl, queueUrl, consumer: 'case-worker', max: 5, ratePerSecond: 5, waitSeconds: 0 },
    );

    // Assess: the terminal key has a fresh attempt budget, the completed one is unchanged (its copy is a no-op).
    expect(result.moved).toBe(2);
    expect(await depth(sqs, dlqUrl)).toEqual({ visible: 0, inFlight: 0 });
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 2, inFlight: 0 });
    expect(await inboxItem(failed.idempotencyKey)).toMatchObject({
      status: 'FAILED_RETRYABLE',
      attempts: 0,
      failureCode: 'ACCOUNT_CLOSED',
    });
    expect(await inboxItem(done.idempotencyKey)).toMatchObject({ status: 'COMPLETED', attempts: 1 });
    const audit = await auditItems(dlqUrl);
    expect(audit).toHaveLength(2);
    expect(audit.map((item) => [item.idempotencyKey, item.outcome, item.detail.rearmed]).sort()).toEqual(
      [
        [done.idempotencyKey, 'DONE', false],
        [failed.idempotencyKey, 'DONE', true],
      ].sort(),
    );
    for (const item of audit) {
      expect(item).toMatchObject({ action: 'dlq_redrive', targetQueue: queueUrl, consumer: 'case-worker' });
      expect(item.newMessageId).toEqual(expect.any(String));
      expect(item.finishedAt).toEqual(expect.any(String));
      expect(JSON.stringify(item)).not.toContain('ACC-CLOSED'); // metadata only, never the payload
    }
    // inbox show lists the redrive among the key's operator actions, as on PostgreSQL.
    const shown = await dynamoInboxShow(
      { dynamo: { doc: dynamo.doc, tableName: table }, out: createMemoryOutput() },
      { consumer: 'case-worker', idempotencyKey: failed.idempotencyKey },
    );
    expect(shown.audit).toEqual([
      expect.objectContaining({ action: 'dlq_redrive', outcome: 'DONE', newMessageId: expect.any(String) }),
    ]);
    // The re-armed key is processed again with its fresh budget: the fix is the handler's (here still refused).
    const [moved] =
      (
        await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10 }))
      ).Messages?.filter((m) => m.Body === JSON.stringify(failed)) ?? [];
    expect(moved).toBeDefined();
    const again = await process(sqsRecordFactory(failed));
    expect(again).toMatchObject({ result: 'TERMINAL_FAILURE', failureCode: 'ACCOUNT_CLOSED', attempts: 1 });
  });

  it('puts the inbox item back and keeps the message in the DLQ when the send fails, recording the failure', async () => {
    // Prepare: a client whose SendMessage fails; every other call goes to fauxqs.
    const process = dynamoProcessor(dynamo, table, [payments]);
    const failed = closed(20);
    await process(sqsRecordFactory(failed));
    const before = await inboxItem(failed.idempotencyKey);
    const { queueUrl, dlqUrl } = await createQueues(sqs);
    await sendAll(sqs, dlqUrl, [failed]);
    const failingSend = {
      send: (command: { constructor: { name: string } }) =>
        command.constructor.name === 'SendMessageCommand'
          ? Promise.reject(new Error('AccessDenied'))
          : sqs.send(command as never),
    } as unknown as SQSClient;

    // Act
    const error = await dlqRedrive(
      { store, sqs: failingSend, out: createMemoryOutput(), clock: fastClock() },
      { dlqUrl, queueUrl, consumer: 'case-worker', max: 5, waitSeconds: 0 },
    ).catch((caught: unknown) => caught);

    // Assess
    expect(error).toBeInstanceOf(OperationError);
    expect(before).toMatchObject({ status: 'FAILED_TERMINAL', attempts: 1 });
    expect(await inboxItem(failed.idempotencyKey)).toEqual(before);
    expect(await depth(sqs, dlqUrl)).toEqual({ visible: 1, inFlight: 0 });
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 0, inFlight: 0 });
    expect(await auditItems(dlqUrl)).toEqual([
      expect.objectContaining({
        outcome: 'FAILED',
        detail: expect.objectContaining({ error: 'send: Error', rearmed: false }),
      }),
    ]);
  });

  it('does not re-arm a key that failed with another payload (IDEMPOTENCY_HASH_MISMATCH)', async () => {
    // Prepare: the key completed with one payload; a second message reuses it with another.
    const process = dynamoProcessor(dynamo, table, [payments]);
    const first = paymentEnvelope(30);
    await process(sqsRecordFactory(first));
    const reused = { ...first, payload: { ...first.payload, amount: '99.00' } };
    const mismatch = await process(sqsRecordFactory(reused));
    const before = await inboxItem(first.idempotencyKey);
    const { queueUrl, dlqUrl } = await createQueues(sqs);
    await sendAll(sqs, dlqUrl, [reused]);

    // Act
    await dlqRedrive(
      { store, sqs, out: createMemoryOutput({ json: true }), clock: fastClock() },
      { dlqUrl, queueUrl, consumer: 'case-worker', max: 5, waitSeconds: 0 },
    );

    // Assess: the key keeps the first request's state; the copy is moved as it is.
    expect(mismatch).toMatchObject({ failureCode: 'IDEMPOTENCY_HASH_MISMATCH' });
    expect(await inboxItem(first.idempotencyKey)).toEqual(before);
    expect((await auditItems(dlqUrl)).map((item) => item.detail.rearmed)).toEqual([false]);
  });
});
