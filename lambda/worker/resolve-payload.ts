import type { S3Client } from '@aws-sdk/client-s3';
import { RetryableError, TerminalError } from '../errors.ts';
import { classifyError, type Failure } from './classify-error.ts';
import type { DecodedRecord } from './decode-record.ts';
import { jsonTextDepth, MAX_PAYLOAD_DEPTH } from './json-depth.ts';
import { describeIssues, parseSchema } from './parse-schema.ts';
import { withinDeadline } from './within-deadline.ts';

/**
 * Largest referenced payload a worker reads by default: 64 MiB. Lambda memory bounds what fits (a record's
 * payload is held whole while its handler runs).
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
 * limit is terminal `PAYLOAD_TOO_LARGE` without a request. A JSON payload is parsed (it must be an object nested at
 * most `MAX_PAYLOAD_DEPTH` levels, else `PAYLOAD_TOO_DEEP`) and validated by the handler's schema, as an inline one
 * is; a `document` handler gets the verified bytes.
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
    const { readPayloadObject } = await import('./read-payload-object.ts');
    const controller = new AbortController();
    const { bytes, sha256 } = await withinDeadline(
      readPayloadObject(s3, ref, controller.signal),
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
      return {
        ok: true,
        decoded: { ...decoded, pendingRef: undefined, document: { bytes, sha256, size: bytes.length, ref } },
      };
    }
    const text = bytes.toString('utf8');
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new TerminalError(
        'INVALID_PAYLOAD',
        `the payloadRef object is not JSON (${bytes.length} bytes); ${decoded.envelope.messageType} takes a JSON object`,
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
        `the payloadRef object is JSON but not an object; ${decoded.envelope.messageType} takes a JSON object`,
      );
    }
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
