import { createHash, randomUUID } from 'node:crypto';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import type { PayloadRef } from '../../lambda/worker/envelope.ts';
import { createTestDatabase } from '../support/database.ts';
import { pdfWithPages } from '../support/documents.ts';
import { lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';
import { exampleWorker } from '../support/test-worker.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

const db = await createTestDatabase();
const local = await localQueueFixture();
/** The document service's uploads (outside the stack: the operator's key). */
const s3 = local.s3;
const BUCKET = await local.bucket('case-documents');

async function uploadDocument(documentId: string, bytes: Buffer): Promise<PayloadRef> {
  const key = `documents/${documentId}/original`;
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: bytes }));
  return {
    bucket: BUCKET,
    key,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    size: bytes.length,
  };
}

/** The pattern document's §22 message for `documentId`, its document at `ref` (or an inline payload). */
const extractionRequested = (
  documentId: string,
  body: { payloadRef: PayloadRef } | { payload: object },
  occurredAt = '2026-07-06T10:15:30Z',
) => ({
  messageId: `msg_${randomUUID()}`,
  schemaVersion: 1,
  messageType: 'DocumentMetadataExtractionRequested',
  producer: 'document-service',
  occurredAt,
  idempotencyKey: `document:${documentId}:extract:v1:${occurredAt}`,
  aggregateType: 'document',
  aggregateId: documentId,
  ...body,
});

const documentRow = async (documentId: string) =>
  (await db.sql`select * from documents where document_id = ${documentId}`)[0];

describe('Handler: DocumentMetadataExtractionRequested', () => {
  const worker = exampleWorker(db.sql, { s3: local.as('worker').s3 });

  it('stores type, size, sha256, pages and status of a referenced PDF once, despite duplicates', async () => {
    // Prepare
    const documentId = `DOC-${randomUUID()}`;
    const ref = await uploadDocument(documentId, pdfWithPages(4));
    const envelope = extractionRequested(documentId, { payloadRef: ref });

    // Act: the same message twice in one batch, then redelivered.
    const first = await worker(
      sqsEvent([sqsRecordFactory(envelope), sqsRecordFactory(envelope)]),
      lambdaContext(),
    );
    const again = await worker(sqsEvent([sqsRecordFactory(envelope, { receiveCount: 2 })]), lambdaContext());

    // Assess
    expect(first.batchItemFailures).toEqual([]);
    expect(again.batchItemFailures).toEqual([]);
    expect(await documentRow(documentId)).toMatchObject({
      content_type: 'application/pdf',
      size_bytes: String(ref.size),
      sha256: ref.sha256,
      page_count: 4,
      line_count: null,
      indexing_status: 'INDEXED',
      source_key: ref.key,
    });
    const inbox =
      await db.sql`select status from worker_inbox where idempotency_key = ${envelope.idempotencyKey}`;
    expect(inbox).toEqual([{ status: 'COMPLETED' }]);
  });

  it('counts the lines of a text document and marks a binary one UNSUPPORTED_TYPE', async () => {
    // Prepare
    const textId = `DOC-${randomUUID()}`;
    const binaryId = `DOC-${randomUUID()}`;
    const text = extractionRequested(textId, {
      payloadRef: await uploadDocument(textId, Buffer.from('a\nb\nc\n')),
    });
    const binary = extractionRequested(binaryId, {
      payloadRef: await uploadDocument(binaryId, Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01])),
    });

    // Act
    const response = await worker(
      sqsEvent([sqsRecordFactory(text), sqsRecordFactory(binary)]),
      lambdaContext(),
    );

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(await documentRow(textId)).toMatchObject({
      content_type: 'text/plain',
      line_count: 3,
      indexing_status: 'INDEXED',
    });
    expect(await documentRow(binaryId)).toMatchObject({
      content_type: 'application/octet-stream',
      indexing_status: 'UNSUPPORTED_TYPE',
    });
  });

  it('keeps a newer document when an older request arrives after it (stale no-op)', async () => {
    // Prepare
    const documentId = `DOC-${randomUUID()}`;
    const newer = extractionRequested(
      documentId,
      { payloadRef: await uploadDocument(documentId, pdfWithPages(2)) },
      '2026-07-07T00:00:00Z',
    );
    const olderBytes = Buffer.from('old text\n');
    const olderRef = { ...(await uploadDocument(`${documentId}-old`, olderBytes)) };
    const older = extractionRequested(documentId, { payloadRef: olderRef }, '2026-07-06T00:00:00Z');

    // Act
    await worker(sqsEvent([sqsRecordFactory(newer)]), lambdaContext());
    const response = await worker(sqsEvent([sqsRecordFactory(older)]), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(await documentRow(documentId)).toMatchObject({ content_type: 'application/pdf', page_count: 2 });
    const inbox =
      await db.sql`select result_ref from worker_inbox where idempotency_key = ${older.idempotencyKey}`;
    expect(inbox).toEqual([{ result_ref: null }]);
  });

  it('refuses an inline payload as terminal INVALID_PAYLOAD, naming payloadRef', async () => {
    // Prepare
    const documentId = `DOC-${randomUUID()}`;
    const envelope = extractionRequested(documentId, { payload: { text: 'inline' } });

    // Act
    const response = await worker(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    const [row] = await db.sql`
      select reason_code, reason_message from worker_quarantine where idempotency_key = ${envelope.idempotencyKey}`;
    expect(row).toMatchObject({ reason_code: 'INVALID_PAYLOAD' });
    expect(row?.reason_message).toContain('by payloadRef');
    expect(await documentRow(documentId)).toBeUndefined();
  });
});
