import { createHash } from 'node:crypto';
import { CreateBucketCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { OUTBOX_MAX_MESSAGE_BYTES } from '../../lambda/outbox/prepare-outbox-envelope.ts';
import type { PayloadRef } from '../../lambda/worker/envelope.ts';
import type { DemoMessages } from './demo-messages.ts';
import { exampleEnvelope } from './example-envelope.ts';

/**
 * The documents the payloadRef cases refer to, uploaded to the run's bucket.
 *
 * @internal
 */
export interface DemoDocuments {
  readonly bucket: string;
  readonly pdf: PayloadRef;
  readonly text: PayloadRef;
}

/**
 * Uploads a small PDF and a text document under the run's prefix (creating a bucket of its own without one).
 *
 * @internal
 */
export async function uploadDocuments(s3: S3Client, runId: string, given?: string): Promise<DemoDocuments> {
  const bucket = given ?? `sqs-inbox-worker-${runId}`;
  if (!given) await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  const upload = async (key: string, bytes: Buffer): Promise<PayloadRef> => {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: bytes }));
    return { bucket, key, sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.length };
  };
  const pages = Array.from({ length: 3 }, (_, i) => `${i + 3} 0 obj << /Type /Page /Parent 2 0 R >> endobj`);
  return {
    bucket,
    pdf: await upload(
      `${runId}/contract.pdf`,
      Buffer.from(
        `%PDF-1.7\n2 0 obj << /Type /Pages /Count 3 >> endobj\n${pages.join('\n')}\n%%EOF\n`,
        'latin1',
      ),
    ),
    text: await upload(`${runId}/notes.txt`, Buffer.from('first line\nsecond line\nthird line\n')),
  };
}

/** A `DocumentMetadataExtractionRequested` of `documentId` whose payload is `payloadRef`. */
function documentRequest(documentId: string, payloadRef: PayloadRef) {
  const { payload: _none, ...envelope } = exampleEnvelope({
    messageType: 'DocumentMetadataExtractionRequested',
    idempotencyKey: `${documentId}:extract:v1`,
    aggregateType: 'document',
    aggregateId: documentId,
    payload: {},
  });
  return { ...envelope, payloadRef };
}

/**
 * Adds the payloadRef cases: documents read from S3 and verified before the handler runs (one delivered twice),
 * a wrong checksum, a missing object, and a payment `bigPaymentId` too large for a message, which the outbox
 * offloads.
 *
 * @internal
 */
export function addPayloadRefCases(
  add: DemoMessages['add'],
  runId: string,
  documents: DemoDocuments,
  bigPaymentId: string,
): void {
  const pdf = add('payload-ref', documentRequest(`${runId}-doc-pdf`, documents.pdf));
  add('payload-ref', documentRequest(`${runId}-doc-text`, documents.text));
  add('duplicate', pdf);
  add(
    'payload-ref-broken',
    documentRequest(`${runId}-doc-tampered`, { ...documents.text, sha256: '0'.repeat(64) }),
  );
  add(
    'payload-ref-broken',
    documentRequest(`${runId}-doc-missing`, { ...documents.text, key: `${runId}/missing` }),
  );
  const big = exampleEnvelope({
    messageType: 'PaymentCaptured',
    idempotencyKey: bigPaymentId,
    aggregateType: 'Payment',
    aggregateId: bigPaymentId,
    payload: {
      paymentId: bigPaymentId,
      accountId: 'acct-big',
      amount: 1,
      currency: 'EUR',
      note: 'x'.repeat(OUTBOX_MAX_MESSAGE_BYTES),
    },
  });
  add('payload-ref', big, 1, true);
}
