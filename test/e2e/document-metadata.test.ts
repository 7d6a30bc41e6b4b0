import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTestDatabase } from '../support/database.ts';
import {
  BINARY_BYTES,
  extractInOneBatch,
  extractionRequested,
  pdfWithPages,
  THREE_LINES,
  uploadDocument,
} from '../support/documents.ts';
import { lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';
import { exampleWorker } from '../support/test-worker.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

const db = await createTestDatabase();
const local = await localQueueFixture();
/** The document service's uploads (outside the stack: the operator's key). */
const s3 = local.s3;
const BUCKET = await local.bucket('case-documents');

/** The document service's upload to the test's bucket. */
const upload = (documentId: string, bytes: Buffer) => uploadDocument(s3, BUCKET, documentId, bytes);

const documentRow = async (documentId: string) =>
  (await db.sql`select * from documents where document_id = ${documentId}`)[0];

describe('Handler: DocumentMetadataExtractionRequested', () => {
  const worker = exampleWorker(db.sql, { s3: local.as('worker').s3 });

  it('stores type, size, sha256, pages and status of a referenced PDF once, despite duplicates', async () => {
    // Prepare
    const documentId = `DOC-${randomUUID()}`;
    const ref = await upload(documentId, pdfWithPages(4));
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
    // Act: both in one batch.
    const { response, ids } = await extractInOneBatch(worker, upload, {
      text: THREE_LINES,
      binary: BINARY_BYTES,
    });

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(await documentRow(ids.text)).toMatchObject({
      content_type: 'text/plain',
      line_count: 3,
      indexing_status: 'INDEXED',
    });
    expect(await documentRow(ids.binary)).toMatchObject({
      content_type: 'application/octet-stream',
      indexing_status: 'UNSUPPORTED_TYPE',
    });
  });

  it('keeps a newer document when an older request arrives after it (stale no-op)', async () => {
    // Prepare
    const documentId = `DOC-${randomUUID()}`;
    const newer = extractionRequested(
      documentId,
      { payloadRef: await upload(documentId, pdfWithPages(2)) },
      '2026-07-07T00:00:00Z',
    );
    const olderBytes = Buffer.from('old text\n');
    const olderRef = { ...(await upload(`${documentId}-old`, olderBytes)) };
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
