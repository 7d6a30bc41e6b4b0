import { randomUUID } from 'node:crypto';
import { GetCommand, paginateScan } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  documentItemKey,
  documentMetadataExtractionRequestedDynamo,
  exampleDynamoHandlers,
} from '../../lambda/domain/dynamodb/index.ts';
import { inboxKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import * as samples from '../support/documents.ts';
import { type DynamoProcessor, dynamoProcessor } from '../support/dynamo-processor.ts';
import { lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';
import { dynamoPayloadWorkerFixture } from './dynamo-payload-worker-fixture.ts';

process.env.POWERTOOLS_METRICS_DISABLED = 'true';

// The DynamoDB document handler behind the real worker: its S3 reads with the worker's key (fauxqs S3), its table
// calls with the worker's role (the local IAM layer in front of DynamoDB Local, which enforces the DOCUMENT# grant).
const deployment = await dynamoPayloadWorkerFixture('document-metadata');
const { local, dynamo } = deployment;
/** One record at a time, with its outcome (the store-level view of the same handlers and S3 reads). */
let processOne: DynamoProcessor;
beforeAll(() => {
  processOne = dynamoProcessor(dynamo, deployment.table, exampleDynamoHandlers, {
    payloads: { s3: async () => local.as('worker').s3, maxBytes: 1024 * 1024 },
  });
});

/** The document service's upload to the test's bucket (outside the stack: the operator's key). */
const upload = (documentId: string, bytes: Buffer) =>
  samples.uploadDocument(local.s3, deployment.bucket, documentId, bytes);

const get = async (key: { PK: string; SK: string }) =>
  (await dynamo.doc.send(new GetCommand({ TableName: deployment.table, Key: key, ConsistentRead: true })))
    .Item;
const documentItem = (documentId: string) => get(documentItemKey(documentId));
const inboxItem = (idempotencyKey: string) => get(inboxKey('case-worker', idempotencyKey));
async function quarantineItem(idempotencyKey: string): Promise<Record<string, unknown> | undefined> {
  for await (const page of paginateScan(
    { client: dynamo.doc },
    { TableName: deployment.table, ConsistentRead: true },
  )) {
    const found = (page.Items ?? []).find(
      (item) => String(item.PK).startsWith('QUARANTINE#') && item.idempotencyKey === idempotencyKey,
    );
    if (found) return found;
  }
  return undefined;
}

describe('Handler: DocumentMetadataExtractionRequested on DynamoDB (documentMetadataExtractionRequestedDynamo)', () => {
  it('is registered with the PostgreSQL handler’s message type, schema version and referenced payload', () => {
    // Assess
    expect(exampleDynamoHandlers).toContain(documentMetadataExtractionRequestedDynamo);
    expect(documentMetadataExtractionRequestedDynamo).toMatchObject({
      store: 'dynamodb',
      messageType: 'DocumentMetadataExtractionRequested',
      schemaVersion: 1,
      referencedPayload: 'document',
    });
  });

  it('stores type, size, sha256, pages and status of a referenced PDF once, despite duplicates', async () => {
    // Prepare
    const documentId = `DOC-${randomUUID()}`;
    const ref = await upload(documentId, samples.pdfWithPages(4));
    const envelope = samples.extractionRequested(documentId, { payloadRef: ref });

    // Act: the same message twice in one batch, then redelivered.
    const first = await deployment.worker(
      sqsEvent([sqsRecordFactory(envelope), sqsRecordFactory(envelope)]),
      lambdaContext(),
    );
    const again = await deployment.worker(
      sqsEvent([sqsRecordFactory(envelope, { receiveCount: 2 })]),
      lambdaContext(),
    );

    // Assess
    expect(first.batchItemFailures).toEqual([]);
    expect(again.batchItemFailures).toEqual([]);
    const item = await documentItem(documentId);
    expect(item).toMatchObject({
      contentType: 'application/pdf',
      sizeBytes: ref.size,
      sha256: ref.sha256,
      pageCount: 4,
      indexingStatus: 'INDEXED',
      sourceBucket: deployment.bucket,
      sourceKey: ref.key,
      requestedAt: '2026-07-06T10:15:30.000Z',
      sourceEventId: envelope.messageId,
    });
    expect(item).not.toHaveProperty('lineCount');
    expect(await inboxItem(envelope.idempotencyKey)).toMatchObject({
      status: 'COMPLETED',
      resultRef: `documents/${documentId}`,
    });
  });

  it('counts the lines of a text document and marks a binary one UNSUPPORTED_TYPE', async () => {
    // Act: both in one batch.
    const { response, ids } = await samples.extractInOneBatch(deployment.worker, upload, {
      text: samples.THREE_LINES,
      binary: samples.BINARY_BYTES,
    });

    // Assess: a text's lines, no page count; neither for a binary.
    expect(response.batchItemFailures).toEqual([]);
    const items = { text: await documentItem(ids.text), binary: await documentItem(ids.binary) };
    expect(items).toMatchObject({
      text: { contentType: 'text/plain', lineCount: 3, indexingStatus: 'INDEXED' },
      binary: { contentType: 'application/octet-stream', indexingStatus: 'UNSUPPORTED_TYPE' },
    });
    expect(items.text).not.toHaveProperty('pageCount');
    expect(items.binary).not.toHaveProperty('pageCount');
    expect(items.binary).not.toHaveProperty('lineCount');
  });

  it('keeps a newer document when an older request arrives after it (STALE_VERSION_SKIPPED)', async () => {
    // Prepare
    const documentId = `DOC-${randomUUID()}`;
    const newer = samples.extractionRequested(
      documentId,
      { payloadRef: await upload(documentId, samples.pdfWithPages(2)) },
      '2026-07-07T00:00:00Z',
    );
    const older = samples.extractionRequested(
      documentId,
      { payloadRef: await upload(`${documentId}-old`, Buffer.from('old text\n')) },
      '2026-07-06T00:00:00Z',
    );

    // Act
    const first = await processOne(sqsRecordFactory(newer));
    const outcome = await processOne(sqsRecordFactory(older));

    // Assess: the newer document stays; the older request is completed without its effect.
    expect(first).toMatchObject({ result: 'COMPLETED' });
    expect(outcome).toMatchObject({ result: 'STALE_VERSION_SKIPPED', acknowledged: true });
    expect(await documentItem(documentId)).toMatchObject({
      contentType: 'application/pdf',
      pageCount: 2,
      requestedAt: '2026-07-07T00:00:00.000Z',
      sourceEventId: newer.messageId,
    });
    expect(await inboxItem(older.idempotencyKey)).toMatchObject({ status: 'COMPLETED' });
  });

  it('acknowledges the same document under another request as COMPLETED, its item unchanged', async () => {
    // Prepare: the same bytes requested twice at the same time under two keys.
    const documentId = `DOC-${randomUUID()}`;
    const ref = await upload(documentId, Buffer.from('same text\n'));
    const first = samples.extractionRequested(documentId, { payloadRef: ref });
    const second = {
      ...first,
      messageId: `msg_${randomUUID()}`,
      idempotencyKey: `${first.idempotencyKey}:again`,
    };
    await processOne(sqsRecordFactory(first));

    // Act
    const outcome = await processOne(sqsRecordFactory(second));

    // Assess
    expect(outcome).toMatchObject({ result: 'COMPLETED', acknowledged: true });
    expect(await inboxItem(second.idempotencyKey)).toMatchObject({ status: 'COMPLETED' });
    expect(await documentItem(documentId)).toMatchObject({ sourceEventId: first.messageId, lineCount: 1 });
  });

  it('refuses an inline payload as terminal INVALID_PAYLOAD, naming payloadRef', async () => {
    // Prepare
    const documentId = `DOC-${randomUUID()}`;
    const envelope = samples.extractionRequested(documentId, { payload: { text: 'inline' } });

    // Act
    const response = await deployment.worker(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    const quarantined = await quarantineItem(envelope.idempotencyKey);
    expect(quarantined).toMatchObject({ reasonCode: 'INVALID_PAYLOAD' });
    expect(String(quarantined?.reasonMessage)).toContain('by payloadRef');
    expect(await documentItem(documentId)).toBeUndefined();
  });

  it('quarantines a document whose bytes do not match the reference (PAYLOAD_CHECKSUM_MISMATCH), storing nothing', async () => {
    // Prepare
    const documentId = `DOC-${randomUUID()}`;
    const ref = await upload(documentId, Buffer.from('some text\n'));
    const envelope = samples.extractionRequested(documentId, {
      payloadRef: { ...ref, sha256: '0'.repeat(64) },
    });

    // Act
    const response = await deployment.worker(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(await quarantineItem(envelope.idempotencyKey)).toMatchObject({
      reasonCode: 'PAYLOAD_CHECKSUM_MISMATCH',
    });
    expect(await documentItem(documentId)).toBeUndefined();
  });

  it('throws terminal DOCUMENT_MISSING when it is given no document, writing nothing', async () => {
    // Prepare: the context of a worker that passed no bytes (a registration that does not read payloadRef).
    const documentId = `DOC-${randomUUID()}`;
    const payloadRef = { bucket: deployment.bucket, key: 'k', sha256: '0'.repeat(64), size: 1 };
    const envelope = samples.extractionRequested(documentId, { payloadRef });

    // Act
    const handled = documentMetadataExtractionRequestedDynamo.handle({
      client: dynamo.doc,
      table: deployment.table,
      consumer: 'case-worker',
      payload: payloadRef,
      envelope: envelope as never,
      record: sqsRecordFactory(envelope),
    });

    // Assess
    await expect(handled).rejects.toMatchObject({ name: 'TerminalError', code: 'DOCUMENT_MISSING' });
    expect(await documentItem(documentId)).toBeUndefined();
  });
});
