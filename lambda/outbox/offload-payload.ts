// Imported statically by the package's public API (sqs-inbox-worker/outbox, beside enqueueOutbox, which handlers
// import to publish events): the SDK's S3 code is therefore loaded with import() inside offloadPayload, on the first
// offload, so it stays out of the static graph (and the cold start) of bundles that never offload
// (test/infra/bundle-worker.test.ts).
import { hash } from 'node:crypto';
import type { S3Client } from '@aws-sdk/client-s3';
import type { Envelope } from '../worker/envelope.ts';
import { canonicalJson } from '../worker/request-hash.ts';
import { checkPayloadDepth } from './check-payload-depth.ts';
import { OutboxOffloadError } from './errors.ts';

/**
 * Where {@link offloadPayload} writes payloads.
 */
export interface PayloadOffloadTarget {
  /** S3 client (PutObject only). */
  readonly s3: Pick<S3Client, 'send'>;
  /** The payload bucket (versioned: see docs/large-payloads.md). */
  readonly bucket: string;
  /** Key prefix; the key is `<prefix>sha256/<hex>`. @default 'payloads/' */
  readonly keyPrefix?: string;
}

/**
 * Writes an envelope's inline payload to S3 and returns the envelope with a `payloadRef` instead: the canonical
 * JSON of the payload (key-sorted, so the same payload is the same object) under a content-addressed key
 * `<prefix>sha256/<hex>`, with its SHA-256 sent as `ChecksumSHA256` so S3 refuses a corrupted upload, and the
 * `versionId` S3 returns (a versioned bucket) recorded in the reference. Writing the same payload again writes
 * the same key and bytes: a retry cannot change what an earlier message refers to.
 *
 * Call it before the producer transaction to keep S3 out of it (then pass the result to `enqueueOutbox`), or
 * let `enqueueOutbox` call it. An object whose transaction rolls back stays behind, unreferenced: the bucket's
 * lifecycle removes it.
 *
 * @throws InvalidOutboxEnvelopeError when the payload nests deeper than `MAX_PAYLOAD_DEPTH` (64) levels.
 * @throws OutboxOffloadError when the upload fails (the producer transaction should roll back and retry).
 *
 * @example
 * ```ts
 * const offloaded = await offloadPayload({ s3, bucket: 'case-payloads' }, envelope);
 * await sql.begin((sql) => enqueueOutbox(sql, offloaded));
 * ```
 */
export async function offloadPayload(target: PayloadOffloadTarget, envelope: Envelope): Promise<Envelope> {
  if (envelope.payload === undefined) return envelope;
  checkPayloadDepth(envelope);
  const body = Buffer.from(canonicalJson(envelope.payload), 'utf8');
  const digest = hash('sha256', body, 'buffer');
  const sha256 = digest.toString('hex');
  const key = `${target.keyPrefix ?? 'payloads/'}sha256/${sha256}`;
  let versionId: string | undefined;
  try {
    // Imported on first use, through the module that names only the commands sent: `lambda/outbox/index.ts`
    // re-exports this function, and a static import put the S3 SDK in the cold start of every worker that imports
    // the outbox (docs/performance.md).
    const { PutObjectCommand } = await import('../payloads/s3-sdk.ts');
    const response = await target.s3.send(
      new PutObjectCommand({
        Bucket: target.bucket,
        Key: key,
        Body: body,
        ContentType: 'application/json',
        ChecksumSHA256: digest.toString('base64'),
      }),
    );
    versionId = response.VersionId;
  } catch (error) {
    const name = (error as { name?: string }).name ?? 'Error';
    throw new OutboxOffloadError(
      `Offloading the payload of ${envelope.idempotencyKey} to s3://${target.bucket}/${key} failed (${name}); check that the bucket exists and the producer may s3:PutObject to it, then retry the transaction`,
      { cause: error },
    );
  }
  const { payload: _inline, ...rest } = envelope;
  return {
    ...rest,
    payloadRef: {
      bucket: target.bucket,
      key,
      // An unversioned bucket (or a local emulator) returns none, or the literal "null".
      ...(versionId && versionId !== 'null' ? { versionId } : {}),
      sha256,
      size: body.length,
    },
  };
}
