import type { SQSRecord } from 'aws-lambda';
import { type Envelope, envelopeSchema, isStorableText, type PayloadRef } from './envelope.ts';
import type { HandlerRegistry } from './handler-registry.ts';
import { jsonTextDepth, MAX_PAYLOAD_DEPTH } from './json-depth.ts';
import { describeIssues, parseSchema } from './parse-schema.ts';
import { requestHash } from './request-hash.ts';
import type { ReferencedDocument, RoutedHandler } from './routed-handler.ts';

/**
 * A record that can be processed.
 *
 * @internal
 */
export interface DecodedRecord {
  readonly ok: true;
  readonly envelope: Envelope;
  readonly handler: RoutedHandler;
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
    | 'PAYLOAD_TOO_DEEP'
    | 'DECODE_FAILED'
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

/** An identifier of an undecodable record worth keeping: short text that both stores can hold (else dropped). */
const shortString = (value: unknown, max: number) =>
  typeof value === 'string' && value.length <= max && isStorableText(value) ? value : undefined;

/** Deepest nesting of a body: a payload of {@link MAX_PAYLOAD_DEPTH} levels inside its envelope. */
const MAX_BODY_DEPTH = MAX_PAYLOAD_DEPTH + 1;

/** How far decoding got: what a throw is reported with. */
interface DecodeProgress {
  step: string;
  known?: DecodedKnown;
}

/** What decoding knows of a record once its envelope is valid. */
interface DecodedKnown {
  readonly envelope: Envelope;
  readonly requestHash: string;
  readonly idempotencyKey: string;
  readonly messageType: string;
}

/**
 * Parses and routes one SQS record: JSON → depth bound → envelope schema → handler by messageType and
 * schemaVersion → the handler's payload schema. Pure: no I/O.
 *
 * Never throws: decoding runs the handler's payload schema (its refinements and transforms are code that can throw),
 * and one record's content must never fail its batch. A throw becomes `DECODE_FAILED`, terminal for this record
 * alone, named by the error's name and the step it was thrown in (not its message, which can quote the input).
 *
 * @internal
 */
export function decodeRecord(
  record: SQSRecord,
  registry: HandlerRegistry,
): DecodedRecord | UndecodableRecord {
  const progress: DecodeProgress = { step: 'the JSON parse and the depth check' };
  try {
    return decodeBody(record.body, registry, progress);
  } catch (error) {
    const name = (error instanceof Error ? error.name : typeof error).slice(0, 100);
    const inSchema = progress.step.startsWith('the payload schema');
    return {
      ok: false,
      code: 'DECODE_FAILED',
      message: `decoding threw ${name} (in ${progress.step}); ${
        inSchema
          ? 'fix the schema, then release or redrive the message'
          : 'an engine defect: report it with the message body'
      }`,
      ...progress.known,
    };
  }
}

/** {@link decodeRecord}'s steps, recording in `progress` how far they got. */
function decodeBody(
  text: string,
  registry: HandlerRegistry,
  progress: DecodeProgress,
): DecodedRecord | UndecodableRecord {
  const parsed = decodeEnvelope(text, progress);
  if (!parsed.ok) return parsed;
  const { envelope } = parsed;
  progress.step = 'the request hash';
  const hash = requestHash(envelope);
  const known = {
    envelope,
    requestHash: hash,
    idempotencyKey: envelope.idempotencyKey,
    messageType: envelope.messageType,
  };
  progress.known = known;
  return routeEnvelope(known, registry, progress);
}

/** The body as JSON, within the depth bound, as an envelope (nothing of it trusted yet). */
function decodeEnvelope(
  text: string,
  progress: DecodeProgress,
): { readonly ok: true; readonly envelope: Envelope } | UndecodableRecord {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return {
      ok: false,
      code: 'INVALID_JSON',
      message: `body is not JSON (${text.length} characters)`,
    };
  }
  const raw = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const rawIds = {
    idempotencyKey: shortString(raw.idempotencyKey, 200),
    messageType: shortString(raw.messageType, 100),
  };
  // Before anything recursive sees the body: JSON.parse does not recurse, but JSON.stringify (the request hash),
  // a recursive payload schema and a handler walking its payload do. One scan of the text, no allocation.
  const depth = jsonTextDepth(text);
  if (depth > MAX_BODY_DEPTH) {
    return {
      ok: false,
      code: 'PAYLOAD_TOO_DEEP',
      message: `the body nests ${depth} levels of objects and arrays, above the bound of ${MAX_BODY_DEPTH} (a payload of at most ${MAX_PAYLOAD_DEPTH} levels in its envelope); flatten the payload`,
      ...rawIds,
    };
  }
  progress.step = 'the envelope schema';
  const parsed = parseSchema(envelopeSchema, body);
  if (!parsed.success) {
    return {
      ok: false,
      code: 'INVALID_ENVELOPE',
      message: `invalid envelope: ${describeIssues(parsed.error)}`,
      ...rawIds,
    };
  }
  return { ok: true, envelope: parsed.data };
}
/** The envelope's handler, and its payload: inline and valid, a document by reference, or left for the S3 read. */
function routeEnvelope(
  known: DecodedKnown,
  registry: HandlerRegistry,
  progress: DecodeProgress,
): DecodedRecord | UndecodableRecord {
  const { envelope, requestHash: hash } = known;
  progress.step = 'the handler registry';
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
  progress.step = `the payload schema of ${envelope.messageType} v${envelope.schemaVersion}`;
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
