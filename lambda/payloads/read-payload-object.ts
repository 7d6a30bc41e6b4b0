// Loaded with import() on the first record that carries a payloadRef: it pulls in the SDK's S3 code, which
// most cold starts never need (a chunk of its own in the bundle, like the SQS client: lib/bundled-function.ts).
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { RetryableError, TerminalError } from '../errors.ts';
import type { PayloadRef } from '../worker/envelope.ts';

/** Where a reference points, for messages: `s3://bucket/key (version v)`. Names the object, never its bytes. */
export function describeRef(ref: PayloadRef): string {
  return `s3://${ref.bucket}/${ref.key}${ref.versionId ? ` (version ${ref.versionId})` : ''}`;
}

interface S3LikeError {
  name?: string;
  code?: string;
  $metadata?: { httpStatusCode?: number };
}

/**
 * Classifies a failed GetObject: a missing key, version or bucket is terminal `PAYLOAD_NOT_FOUND`; a denial is
 * retryable `PAYLOAD_ACCESS_DENIED` (a policy or KMS grant can be fixed while the message waits, and S3 answers
 * a missing object with AccessDenied to a reader without s3:ListBucket); throttling, 5xx and network errors are
 * retryable. The attempt policy bounds every retryable code.
 *
 * @internal
 */
export function classifyS3Error(error: unknown, ref: PayloadRef): Error {
  if (error instanceof TerminalError || error instanceof RetryableError) return error;
  const e = (typeof error === 'object' && error !== null ? error : {}) as S3LikeError;
  const name = e.name ?? 'Error';
  const status = e.$metadata?.httpStatusCode;
  const where = describeRef(ref);
  if (name === 'NoSuchKey' || name === 'NoSuchVersion' || name === 'NoSuchBucket' || status === 404) {
    return new TerminalError(
      'PAYLOAD_NOT_FOUND',
      `${where} does not exist (${name}); the producer must upload the object before sending its reference, and the bucket's lifecycle must keep it until the message and its DLQ copy expire`,
      { cause: error },
    );
  }
  if (name === 'InvalidArgument' && ref.versionId) {
    return new TerminalError(
      'PAYLOAD_NOT_FOUND',
      `${where}: S3 rejected the versionId (${name}); send the versionId PutObject returned`,
      { cause: error },
    );
  }
  if (name === 'AccessDenied' || status === 403) {
    return new RetryableError(
      'PAYLOAD_ACCESS_DENIED',
      `reading ${where} was denied (${name}); grant the worker's role s3:GetObject and s3:GetObjectVersion on the payload bucket (and kms:Decrypt on its key). Without s3:ListBucket, S3 also answers a missing object this way`,
      { cause: error },
    );
  }
  if (name === 'SlowDown' || status === 503) {
    return new RetryableError('PAYLOAD_S3_THROTTLED', `S3 throttled the read of ${where} (${name})`, {
      cause: error,
    });
  }
  const code = typeof e.code === 'string' ? ` ${e.code}` : '';
  return new RetryableError(
    'PAYLOAD_READ_FAILED',
    `reading ${where} failed: ${name}${code}${status ? ` (HTTP ${status})` : ''}`,
    { cause: error },
  );
}

/**
 * Reads the object a `payloadRef` names (its `versionId` when given) and checks it against the reference and
 * the worker's limit, streamed through SHA-256 into one buffer of `ref.size` bytes: no chunk list, no second
 * copy (the caller has checked `ref.size` against `maxBytes`, so never more than the limit is kept).
 *
 * An object above `maxBytes` is terminal `PAYLOAD_TOO_LARGE` without being read whole: refused on S3's
 * `ContentLength` before the body is read, and, when S3 sends none, the stream is cut as soon as more than
 * `maxBytes` bytes have arrived (the body destroyed, which closes the connection). A size or checksum that differs
 * from the reference is terminal `PAYLOAD_CHECKSUM_MISMATCH`: the object is not the one the message was sent for.
 *
 * @throws TerminalError or RetryableError with a `PAYLOAD_*` code (see {@link classifyS3Error}).
 *
 * @internal
 */
export async function readPayloadObject(
  s3: Pick<S3Client, 'send'>,
  ref: PayloadRef,
  maxBytes: number,
  signal: AbortSignal,
): Promise<{ bytes: Buffer; sha256: string }> {
  const where = describeRef(ref);
  const mismatch = (detail: string) =>
    new TerminalError(
      'PAYLOAD_CHECKSUM_MISMATCH',
      `${where} ${detail}; the object changed after the message was sent (write payloads under new keys in a versioned bucket and send the versionId)`,
    );
  const tooLarge = (detail: string) =>
    new TerminalError(
      'PAYLOAD_TOO_LARGE',
      `${where} ${detail}, above the worker's limit of ${maxBytes} bytes (maxPayloadBytes, PAYLOAD_MAX_BYTES); payloadRef.size says ${ref.size}. The object was not read whole; send smaller objects, or raise the limit with the memory (docs/large-payloads.md)`,
    );
  let body: Readable | undefined;
  try {
    const response = await s3.send(
      new GetObjectCommand({
        Bucket: ref.bucket,
        Key: ref.key,
        ...(ref.versionId ? { VersionId: ref.versionId } : {}),
      }),
      { abortSignal: signal },
    );
    body = response.Body as Readable | undefined;
    const length = response.ContentLength;
    if (length !== undefined && length > maxBytes) throw tooLarge(`is ${length} bytes (S3 ContentLength)`);
    if (length !== undefined && length !== ref.size) {
      throw mismatch(`is ${length} bytes, payloadRef.size says ${ref.size}`);
    }
    if (!body) throw mismatch('has no body');
    const digest = createHash('sha256');
    // Filled as the chunks arrive; every byte is written before it is returned (the length is checked below). Its
    // own memory, not a slice of Node's shared pool: a handler given the bytes sees nothing else through `.buffer`.
    const bytes = Buffer.allocUnsafeSlow(ref.size);
    let received = 0;
    for await (const chunk of body) {
      const part = chunk as Buffer;
      if (received + part.length > maxBytes) {
        throw tooLarge(`sent more than ${maxBytes} bytes (no ContentLength)`);
      }
      digest.update(part);
      if (received < ref.size) part.copy(bytes, received, 0, Math.min(part.length, ref.size - received));
      received += part.length;
    }
    if (received !== ref.size) throw mismatch(`is ${received} bytes, payloadRef.size says ${ref.size}`);
    const sha256 = digest.digest('hex');
    if (sha256 !== ref.sha256) throw mismatch('has another SHA-256 than payloadRef.sha256');
    return { bytes, sha256 };
  } catch (error) {
    throw classifyS3Error(error, ref);
  } finally {
    // A read given up on (too large, mismatch, deadline) releases its socket at once: the rest is never sent.
    if (body && !body.readableEnded) body.destroy();
  }
}
