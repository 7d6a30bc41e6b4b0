import type { S3Client } from '@aws-sdk/client-s3';
import { RetryableError, TerminalError } from '../errors.ts';
import { classifyError, type Failure } from './classify-error.ts';
import type { DecodedRecord } from './decode-record.ts';
import { jsonTextDepth, MAX_PAYLOAD_DEPTH } from './json-depth.ts';
import { describeIssues, parseSchema } from './parse-schema.ts';
import { withinDeadline } from './within-deadline.ts';

/**
 * Largest referenced payload a worker reads by default: 64 MiB. Memory bounds what fits (a record's payload is held
 * whole while its handler runs): the stack gives its workers less when their memory cannot hold it
 * (`lib/resolve-payload-limit.ts`).
 *
 * @internal
 */
export const DEFAULT_MAX_PAYLOAD_BYTES = 64 * 1024 * 1024;

/**
 * What {@link resolvePayload} needs: the S3 client (made on first use) and the size limit.
 *
 * @internal
 */
export interface PayloadReader {
  /** The S3 client, or undefined when the worker has none. */
  readonly s3: () => Promise<Pick<S3Client, 'send'> | undefined>;
  /** Largest object read, in bytes. */
  readonly maxBytes: number;
}

/**
 * A record whose payload was read (`ok`), or why it could not be.
 *
 * @internal
 */
export type ResolvedPayload =
  | { readonly ok: true; readonly decoded: DecodedRecord }
  | { readonly ok: false; readonly failure: Failure };

/**
 * Reads the payload of a record that carries a `payloadRef`, before its inbox transaction: no database
 * connection is held while S3 answers. The read is bounded by `timeoutMs` (the Lambda time left less what
 * settling the record needs) and aborted past it (retryable `PAYLOAD_READ_TIMEOUT`). A declared size above the
 * limit is terminal `PAYLOAD_TOO_LARGE` without a request (a larger object than declared is refused while it is
 * read: `read-payload-object.ts`). A JSON payload is parsed (it must be an object nested at most
 * `MAX_PAYLOAD_DEPTH` levels, else `PAYLOAD_TOO_DEEP`) and validated by the handler's schema, as an inline one is; a
 * `document` handler gets the verified bytes.
 *
 * @internal
 */
export async function resolvePayload(
  decoded: DecodedRecord,
  reader: PayloadReader,
  timeoutMs: number,
): Promise<ResolvedPayload> {
  const ref = decoded.pendingRef;
  if (!ref) return { ok: true, decoded };
  try {
    if (ref.size > reader.maxBytes) {
      throw new TerminalError(
        'PAYLOAD_TOO_LARGE',
        `payloadRef.size ${ref.size} bytes is above the worker's limit of ${reader.maxBytes} bytes (maxPayloadBytes, PAYLOAD_MAX_BYTES); raise the limit (and the function's memory) or send smaller objects`,
      );
    }
    const s3 = await reader.s3();
    if (!s3) {
      throw new RetryableError(
        'PAYLOAD_READER_MISSING',
        'the message carries a payloadRef but the worker has no S3 client; pass `s3` to createWorker',
      );
    }
    const { readPayloadObject } = await import('../payloads/read-payload-object.ts');
    const controller = new AbortController();
    const object: { bytes?: Buffer; sha256: string } = await withinDeadline(
      readPayloadObject(s3, ref, reader.maxBytes, controller.signal),
      timeoutMs,
      (waited) => {
        controller.abort();
        return new RetryableError(
          'PAYLOAD_READ_TIMEOUT',
          `the payload object did not arrive within ${waited} ms (the time left before the Lambda timeout); it is read again on the next delivery`,
        );
      },
    );
    if (decoded.handler.referencedPayload === 'document') {
      const bytes = object.bytes as Buffer;
      const document = { bytes, sha256: object.sha256, size: bytes.length, ref };
      return { ok: true, decoded: { ...decoded, pendingRef: undefined, document } };
    }
    const value = parseJsonObject(object, decoded.envelope.messageType);
    const payload = parseSchema(decoded.handler.payload, value);
    if (!payload.success) {
      throw new TerminalError(
        'INVALID_PAYLOAD',
        `invalid payload: ${describeIssues(payload.error, 'payload.')}`,
      );
    }
    return { ok: true, decoded: { ...decoded, pendingRef: undefined, payload: payload.data } };
  } catch (error) {
    return { ok: false, failure: classifyError(error) };
  }
}

/**
 * Decodes a JSON payload object and checks its depth. The bytes are taken out of `object` once decoded to text, so
 * a collection during `JSON.parse` (which allocates the whole value) can free them, and the text is unreferenced
 * once this returns, before the handler's schema copies the value. Measured peaks: docs/performance.md.
 */
function parseJsonObject(object: { bytes?: Buffer }, messageType: string): object {
  const size = object.bytes?.length ?? 0;
  let text: string;
  let value: unknown;
  try {
    text = (object.bytes as Buffer).toString('utf8');
    object.bytes = undefined;
    value = JSON.parse(text);
  } catch {
    throw new TerminalError(
      'INVALID_PAYLOAD',
      `the payloadRef object is not JSON (${size} bytes); ${messageType} takes a JSON object`,
    );
  }
  // The bound of an inline payload, before the handler's schema (which may recurse) sees it.
  const depth = jsonTextDepth(text);
  if (depth > MAX_PAYLOAD_DEPTH) {
    throw new TerminalError(
      'PAYLOAD_TOO_DEEP',
      `the payloadRef object nests ${depth} levels of objects and arrays, above the bound of ${MAX_PAYLOAD_DEPTH}; flatten the payload`,
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TerminalError(
      'INVALID_PAYLOAD',
      `the payloadRef object is JSON but not an object; ${messageType} takes a JSON object`,
    );
  }
  return value;
}
