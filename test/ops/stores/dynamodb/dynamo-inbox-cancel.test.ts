import { randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { exampleDynamoHandlers, paymentCapturedDynamo } from '../../../../lambda/domain/dynamodb/index.ts';
import { ledgerItemKey } from '../../../../lambda/domain/dynamodb/payment-captured.ts';
import { sqsEventRecord } from '../../../../lambda/sqs/sqs-event-record.ts';
import { inboxKey } from '../../../../lambda/stores/dynamodb/item-keys.ts';
import type { Envelope } from '../../../../lambda/worker/envelope.ts';
import { readEditedBody } from '../../../../tools/ops/edited-release.ts';
import { OperationError } from '../../../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../../../tools/ops/memory-output.ts';
import { dynamoInboxCancel } from '../../../../tools/ops/stores/dynamodb/dynamo-inbox-cancel.ts';
import { dynamoQuarantineRelease } from '../../../../tools/ops/stores/dynamodb/dynamo-quarantine-release.ts';
import { dynamoProcessor } from '../../../support/dynamo-processor.ts';
import { useTestDynamoDb } from '../../../support/dynamodb.ts';
import { gatedHandler } from '../../../support/gated-handler.ts';
import { sqsRecordFactory } from '../../../support/sqs-event.ts';
import { waitFor } from '../../../support/wait-for.ts';
import { createQueues, paymentEnvelope, startOpsSqs } from '../../ops-fixture.ts';

const dynamo = useTestDynamoDb();
const { sqs } = await startOpsSqs();
const consumer = 'case-worker';

const gatedPayment = () => gatedHandler(paymentCapturedDynamo);

const item = async (table: string, key: { PK: string; SK: string }) =>
  (await dynamo.doc.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true }))).Item;
const paymentOf = (envelope: Envelope) => (envelope.payload as { paymentId: string }).paymentId;

/** The quarantine items of a key (one scan of the small test table). */
async function quarantined(table: string, key: string) {
  const scan = await dynamo.doc.send(new ScanCommand({ TableName: table, ConsistentRead: true }));
  return (scan.Items ?? []).filter((i) => String(i.PK).startsWith('QUARANTINE#') && i.idempotencyKey === key);
}

describe('Command: inbox cancel (DynamoDB)', () => {
  it('cancels a key whose copy holds the lease: its transaction is cancelled whole and the copy quarantined', async () => {
    // Prepare: a copy past the gate (PROCESSING under its lease), its handler held.
    const table = await dynamo.createTable('cancel');
    const envelope = paymentEnvelope(1);
    const gated = gatedPayment();
    const process = dynamoProcessor(dynamo, table, [gated.handler]);
    const inFlight = process(sqsRecordFactory(JSON.stringify(envelope)));
    await waitFor('the handler to start', gated.entered, 10_000);

    // Act
    const cancelled = await dynamoInboxCancel(
      { dynamo: { doc: dynamo.doc, tableName: table }, out: createMemoryOutput() },
      {
        consumer,
        idempotencyKey: envelope.idempotencyKey,
        reason: 'customer refunded',
        actor: 'test-operator',
      },
    );
    gated.release();
    const outcome = await inFlight;

    // Assess: nothing applied, the copy quarantined (acknowledged), the item CANCELLED without a ttl, audited.
    expect(cancelled).toMatchObject({ inboxStatusBefore: 'PROCESSING', alreadyCancelled: false });
    expect(outcome).toMatchObject({
      result: 'TERMINAL_FAILURE',
      failureCode: 'CANCELLED',
      acknowledged: true,
    });
    expect(await item(table, ledgerItemKey(paymentOf(envelope)))).toBeUndefined();
    const inbox = await item(table, inboxKey(consumer, envelope.idempotencyKey));
    expect(inbox).toMatchObject({
      status: 'CANCELLED',
      cancelledBy: 'test-operator',
      cancelReason: 'customer refunded',
    });
    expect(inbox?.ttl).toBeUndefined();
    expect(await quarantined(table, envelope.idempotencyKey)).toMatchObject([
      { reasonCode: 'CANCELLED', occurrences: 1 },
    ]);
    const audit = await item(table, { PK: `AUDIT#${cancelled.auditId}`, SK: `WORKER#${consumer}` });
    expect(audit).toMatchObject({ action: 'inbox_cancel', outcome: 'DONE', actor: 'test-operator' });

    // Act: a later copy.
    const later = await dynamoProcessor(
      dynamo,
      table,
      exampleDynamoHandlers,
    )(sqsRecordFactory(JSON.stringify(envelope)));

    // Assess: refused at the gate, quarantined, never applied.
    expect(later).toMatchObject({ result: 'TERMINAL_FAILURE', failureCode: 'CANCELLED', acknowledged: true });
    expect(await item(table, ledgerItemKey(paymentOf(envelope)))).toBeUndefined();
    expect(await quarantined(table, envelope.idempotencyKey)).toMatchObject([{ occurrences: 2 }]);
  });

  it('cancels an unknown key ahead of its first copy, and refuses a COMPLETED key', async () => {
    // Prepare
    const table = await dynamo.createTable('cancel');
    const target = { doc: dynamo.doc, tableName: table };
    const process = dynamoProcessor(dynamo, table, exampleDynamoHandlers);
    const unknown = paymentEnvelope(2);
    const done = paymentEnvelope(3);
    await process(sqsRecordFactory(JSON.stringify(done)));

    // Act
    const marker = await dynamoInboxCancel(
      { dynamo: target, out: createMemoryOutput() },
      { consumer, idempotencyKey: unknown.idempotencyKey },
    );
    const outcome = await process(sqsRecordFactory(JSON.stringify(unknown)));
    const refusal: unknown = await dynamoInboxCancel(
      { dynamo: target, out: createMemoryOutput() },
      { consumer, idempotencyKey: done.idempotencyKey },
    ).catch((error: unknown) => error);

    // Assess
    expect(marker.inboxStatusBefore).toBeNull();
    expect(outcome).toMatchObject({
      result: 'TERMINAL_FAILURE',
      failureCode: 'CANCELLED',
      acknowledged: true,
    });
    expect(await item(table, ledgerItemKey(paymentOf(unknown)))).toBeUndefined();
    expect(refusal).toBeInstanceOf(OperationError);
    expect((refusal as Error).message).toMatch(/is COMPLETED.*compensating message/);
    expect((await item(table, inboxKey(consumer, done.idempotencyKey)))?.status).toBe('COMPLETED');
  });
});

describe('Command: quarantine release --edit (DynamoDB)', () => {
  it('sends the corrected body as <key>:v2, which the worker completes; the original item is marked released as it', async () => {
    // Prepare: a payment whose currency the schema refuses, quarantined by the store.
    const table = await dynamo.createTable('edit');
    const target = { doc: dynamo.doc, tableName: table };
    const { queueUrl, queueArn } = await createQueues(sqs);
    const process = dynamoProcessor(dynamo, table, exampleDynamoHandlers);
    const bad = paymentEnvelope(4);
    (bad.payload as Record<string, unknown>).currency = 'euro';
    await process(sqsRecordFactory(JSON.stringify(bad)));
    const [entry] = await quarantined(table, bad.idempotencyKey);
    const path = join(await mkdtemp(join(tmpdir(), 'edit-')), `${randomUUID()}.json`);
    await writeFile(path, JSON.stringify({ ...bad, payload: { ...bad.payload, currency: 'EUR' } }));

    // Act
    const released = await dynamoQuarantineRelease(
      { dynamo: target, sqs, out: createMemoryOutput() },
      {
        quarantineId: String(entry?.bodyHash),
        queueUrl,
        consumer,
        actor: 'test-operator',
        edit: await readEditedBody(path),
      },
    );
    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 1,
        MessageSystemAttributeNames: ['All'],
      }),
    );
    const message = Messages?.[0];
    if (!message) throw new Error('the edited release sent nothing');
    const outcome = await process(
      sqsEventRecord(message, { eventSourceArn: queueArn, awsRegion: 'us-east-1' }),
    );

    // Assess
    const v2 = `${bad.idempotencyKey}:v2`;
    expect(released.edit).toMatchObject({ releasedAsKey: v2 });
    expect(outcome).toMatchObject({ result: 'COMPLETED' });
    expect((await item(table, inboxKey(consumer, v2)))?.status).toBe('COMPLETED');
    expect(await item(table, ledgerItemKey(paymentOf(bad)))).toMatchObject({ currency: 'EUR' });
    const [after] = await quarantined(table, bad.idempotencyKey);
    expect(after).toMatchObject({ releasedAsKey: v2, releasedBy: 'test-operator' });
    const audit = await item(table, { PK: `AUDIT#${released.auditId}`, SK: `WORKER#${consumer}` });
    expect(audit?.detail).toMatchObject({ edited: true, releasedAsKey: v2, inboxRearmed: false });
    expect(audit?.detail.editedBodyHash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(audit)).not.toContain('euro');
  });
});
