import { randomBytes } from 'node:crypto';

/**
 * The trace a message belongs to, as X-Ray and W3C Trace Context both carry it. The trace id is kept in X-Ray's
 * form (`1-<8 hex: epoch seconds>-<24 hex>`), which maps one to one onto a W3C trace-id (the same 32 hex digits):
 * the outbox row, the SQS message, the inbox row and the worker's log lines all show this one string.
 */
export interface TraceContext {
  /** X-Ray trace id, `1-5759e988-bd862e3fe1be46a994272793`. */
  readonly traceId: string;
  /** The producer's segment (X-Ray `Parent`, W3C parent-id): 16 hex digits, when known. */
  readonly parentId?: string;
  /** Whether the producer's trace was sampled (X-Ray `Sampled=1`, W3C flag `01`). */
  readonly sampled: boolean;
}

/**
 * Name of the message attribute that carries the W3C `traceparent` of a message sent by the outbox relay.
 *
 * @internal
 */
export const TRACEPARENT_ATTRIBUTE = 'traceparent';

/**
 * Bytes the `traceparent` message attribute adds to a message's size as SQS counts it (name, data type `String`
 * and the 55-character value): the outbox keeps envelopes this much below the queue's limit.
 *
 * @internal
 */
export const TRACEPARENT_ATTRIBUTE_BYTES = TRACEPARENT_ATTRIBUTE.length + 'String'.length + 55;

const XRAY_TRACE_ID = /^1-[0-9a-f]{8}-[0-9a-f]{24}$/;
const PARENT_ID = /^[0-9a-f]{16}$/;
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
/** Longer values are not trace headers (AWS caps the X-Ray header at a few hundred characters). */
const MAX_HEADER_LENGTH = 512;

/**
 * Parses an X-Ray trace header (`Root=1-…;Parent=…;Sampled=1`, as in `_X_AMZN_TRACE_ID` and the SQS
 * `AWSTraceHeader` system attribute; other fields such as `Lineage` are ignored). Anything else — a header without
 * a valid `Root`, a malformed `Parent`, an over-long value — gives `undefined`: a bad header is ignored, never an
 * error, and never echoed.
 *
 * @internal
 */
export function parseXRayTraceHeader(header: unknown): TraceContext | undefined {
  if (typeof header !== 'string' || header.length > MAX_HEADER_LENGTH) return undefined;
  let traceId: string | undefined;
  let parentId: string | undefined;
  let sampled = false;
  for (const field of header.split(';')) {
    const at = field.indexOf('=');
    if (at < 0) continue;
    const key = field.slice(0, at).trim();
    const value = field.slice(at + 1).trim();
    if (key === 'Root') {
      if (!XRAY_TRACE_ID.test(value)) return undefined;
      traceId = value;
    } else if (key === 'Parent') {
      if (!PARENT_ID.test(value) || /^0+$/.test(value)) return undefined;
      parentId = value;
    } else if (key === 'Sampled') {
      sampled = value === '1';
    }
  }
  if (!traceId) return undefined;
  return parentId ? { traceId, parentId, sampled } : { traceId, sampled };
}

/**
 * Parses a W3C `traceparent` (`00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>`) into a trace context with
 * the trace id in X-Ray's form. Invalid values (version `ff`, all-zero ids, extra fields in version 00, upper-case
 * hex) give `undefined`.
 *
 * @internal
 */
export function parseTraceparent(value: unknown): TraceContext | undefined {
  if (typeof value !== 'string' || value.length > MAX_HEADER_LENGTH) return undefined;
  const match = TRACEPARENT.exec(value.trim());
  if (!match) return undefined;
  const [, version, traceHex, parentId, flags, rest] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string | undefined,
  ];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceHex) || /^0+$/.test(parentId)) return undefined;
  return {
    traceId: `1-${traceHex.slice(0, 8)}-${traceHex.slice(8)}`,
    parentId,
    sampled: (Number.parseInt(flags, 16) & 1) === 1,
  };
}

/**
 * Parses either form: an X-Ray trace header or a W3C `traceparent`.
 *
 * @internal
 */
export function parseTraceContext(value: unknown): TraceContext | undefined {
  return parseXRayTraceHeader(value) ?? parseTraceparent(value);
}

/**
 * A new trace context: an X-Ray trace id of the current second and 96 random bits, a random parent id, not
 * sampled (no segment of it was recorded). The outbox gives one to a message whose producer has no trace.
 *
 * @internal
 */
export function newTraceContext(nowMs: number = Date.now()): TraceContext {
  const seconds = Math.floor(nowMs / 1000)
    .toString(16)
    .padStart(8, '0')
    .slice(-8);
  return {
    traceId: `1-${seconds}-${randomBytes(12).toString('hex')}`,
    parentId: newParentId(),
    sampled: false,
  };
}

/** A random, non-zero 16-hex-digit parent id. */
function newParentId(): string {
  for (;;) {
    const id = randomBytes(8).toString('hex');
    if (!/^0+$/.test(id)) return id;
  }
}

/**
 * The context with a parent id: a context parsed from a header without `Parent` gets a random one, as both
 * headers the relay sends need one.
 *
 * @internal
 */
export function withParentId(context: TraceContext): Required<TraceContext> {
  return { ...context, parentId: context.parentId ?? newParentId() };
}

/**
 * The X-Ray trace header of a context (`Root=…;Parent=…;Sampled=0|1`): the SQS `AWSTraceHeader` value.
 *
 * @internal
 */
export function formatXRayTraceHeader(context: Required<TraceContext>): string {
  return `Root=${context.traceId};Parent=${context.parentId};Sampled=${context.sampled ? 1 : 0}`;
}

/**
 * The W3C `traceparent` of a context (version 00).
 *
 * @internal
 */
export function formatTraceparent(context: Required<TraceContext>): string {
  const hex = `${context.traceId.slice(2, 10)}${context.traceId.slice(11)}`;
  return `00-${hex}-${context.parentId}-${context.sampled ? '01' : '00'}`;
}
