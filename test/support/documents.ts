import { createHash, randomUUID } from 'node:crypto';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { PayloadRef } from '../../lambda/worker/envelope.ts';
import { lambdaContext, sqsEvent, sqsRecordFactory } from './sqs-event.ts';

/** A small PDF whose page tree holds `pages` page objects (uncompressed, as most generators write it). */
export function pdfWithPages(pages: number): Buffer {
  const objects = Array.from(
    { length: pages },
    (_, i) => `${i + 3} 0 obj << /Type /Page /Parent 2 0 R >> endobj`,
  );
  return Buffer.from(
    `%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Count ${pages} >> endobj\n${objects.join('\n')}\n%%EOF\n`,
    'latin1',
  );
}

/**
 * Uploads `bytes` as the document service would (`s3` with the operator's key) to `documents/<documentId>/original`
 * in `bucket`, and returns the reference it sends.
 */
export async function uploadDocument(
  s3: Pick<S3Client, 'send'>,
  bucket: string,
  documentId: string,
  bytes: Buffer,
): Promise<PayloadRef> {
  const key = `documents/${documentId}/original`;
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: bytes }));
  return { bucket, key, sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.length };
}

/** The pattern document's §22 message for `documentId`, its document at `ref` (or an inline payload). */
export const extractionRequested = (
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

/** A text document of three lines. */
export const THREE_LINES = Buffer.from('a\nb\nc\n');
/** Bytes that are neither a PDF nor text (a NUL among them). */
export const BINARY_BYTES = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]);

/**
 * Uploads each document of `documents` (keyed by a label) under a new document id, then sends one extraction
 * request for each, all in ONE batch, to `worker`. Resolves with the response and the document id of each label.
 */
export async function extractInOneBatch<L extends string>(
  worker: (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>,
  upload: (documentId: string, bytes: Buffer) => Promise<PayloadRef>,
  documents: Readonly<Record<L, Buffer>>,
): Promise<{ response: SQSBatchResponse; ids: Record<L, string> }> {
  const ids = {} as Record<L, string>;
  const records = [];
  for (const [label, bytes] of Object.entries(documents) as [L, Buffer][]) {
    ids[label] = `DOC-${randomUUID()}`;
    records.push(
      sqsRecordFactory(extractionRequested(ids[label], { payloadRef: await upload(ids[label], bytes) })),
    );
  }
  return { response: await worker(sqsEvent(records), lambdaContext()), ids };
}
