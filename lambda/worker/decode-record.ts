import type { SQSRecord } from 'aws-lambda';
import { type Envelope, envelopeSchema, type PayloadRef } from './envelope.ts';
import type { HandlerRegistry } from './handler-registry.ts';
import type { MessageHandler, ReferencedDocument } from './message-handler.ts';
import { describeIssues, parseSchema } from './parse-schema.ts';
import { requestHash } from './request-hash.ts';

/**
 * A record that can be processed.
 *
 * @internal
 */
export interface DecodedRecord {
  readonly ok: true;
  readonly envelope: Envelope;
  readonly handler: MessageHandler;
  /** The validated payload; for a JSON `payloadRef` not read yet, undefined until `resolvePayload`. */
  readonly payload: unknown;
  readonly requestHash: string;
  /**
   * Set while the payload is still in S3: the record must go through `resolvePayload` (outside any transaction)
   * before its handler runs.
   */
  readonly pendingRef?: PayloadRef;
  /** The verified bytes, for a `document` handler, once resolved. */
  readonly document?: ReferencedDocument;
}

/**
 * A record that can never be processed as it is, with what could be read of it.
 *
 * @internal
 */
export interface UndecodableRecord {
  readonly ok: false;
  readonly code:
    | 'INVALID_JSON'
    | 'INVALID_ENVELOPE'
    | 'UNKNOWN_MESSAGE_TYPE'
    | 'UNSUPPORTED_SCHEMA_VERSION'
    | 'INVALID_PAYLOAD';
  /** Safe text: names fields and rules, never values. */
  readonly message: string;
  /** Present when the envelope itself was valid (the payload or the route was not). */
  readonly envelope?: Envelope;
  readonly requestHash?: string;
  /** Best-effort identifiers for quarantine and logs (only short strings are kept). */
  readonly idempotencyKey?: string;
  readonly messageType?: string;
}

const shortString = (value: unknown, max: number) =>
  typeof value === 'string' && value.length <= max ? value : undefined;

/**
 * Parses and routes one SQS record: JSON → envelope schema → handler by messageType and schemaVersion →
 * the handler's payload schema. Pure: no I/O.
 *
 * @internal
 */
export function decodeRecord(
  record: SQSRecord,
  registry: HandlerRegistry,
): DecodedRecord | UndecodableRecord {
  let body: unknown;
  try {
    body = JSON.parse(record.body);
  } catch {
    return {
      ok: false,
      code: 'INVALID_JSON',
      message: `body is not JSON (${record.body.length} characters)`,
    };
  }
  const parsed = parseSchema(envelopeSchema, body);
  if (!parsed.success) {
    const raw = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    return {
      ok: false,
      code: 'INVALID_ENVELOPE',
      message: `invalid envelope: ${describeIssues(parsed.error)}`,
      idempotencyKey: shortString(raw.idempotencyKey, 200),
      messageType: shortString(raw.messageType, 100),
    };
  }
  const envelope = parsed.data;
  const hash = requestHash(envelope);
  const known = {
    envelope,
    requestHash: hash,
    idempotencyKey: envelope.idempotencyKey,
    messageType: envelope.messageType,
  };
  const handler = registry.find(envelope.messageType, envelope.schemaVersion);
  if (!handler) {
    const versions = registry.versions(envelope.messageType);
    return versions.length === 0
      ? {
          ok: false,
          code: 'UNKNOWN_MESSAGE_TYPE',
          message: `no handler for messageType ${envelope.messageType}`,
          ...known,
        }
      : {
          ok: false,
          code: 'UNSUPPORTED_SCHEMA_VERSION',
          message: `${envelope.messageType} schemaVersion ${envelope.schemaVersion} is not supported (supported: ${versions.join(', ')})`,
          ...known,
        };
  }
  const document = handler.referencedPayload === 'document';
  if (envelope.payloadRef && !document) {
    // Read and validated by resolvePayload, before the inbox transaction.
    return {
      ok: true,
      envelope,
      handler,
      payload: undefined,
      requestHash: hash,
      pendingRef: envelope.payloadRef,
    };
  }
  if (document && !envelope.payloadRef) {
    return {
      ok: false,
      code: 'INVALID_PAYLOAD',
      message: `${envelope.messageType} takes its document by payloadRef (an S3 object), not an inline payload; send the document as payloadRef`,
      ...known,
    };
  }
  const payload = parseSchema(handler.payload, document ? envelope.payloadRef : envelope.payload);
  if (!payload.success) {
    return {
      ok: false,
      code: 'INVALID_PAYLOAD',
      message: `invalid payload: ${describeIssues(payload.error, 'payload.')}`,
      ...known,
    };
  }
  return document
    ? {
        ok: true,
        envelope,
        handler,
        payload: payload.data,
        requestHash: hash,
        pendingRef: envelope.payloadRef,
      }
    : { ok: true, envelope, handler, payload: payload.data, requestHash: hash };
}
