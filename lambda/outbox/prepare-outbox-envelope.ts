import {
  formatXRayTraceHeader,
  newTraceContext,
  parseTraceContext,
  parseXRayTraceHeader,
  TRACEPARENT_ATTRIBUTE_BYTES,
  withParentId,
} from '../tracing/trace-context.ts';
import { type Envelope, envelopeSchema } from '../worker/envelope.ts';
import { describeIssues, parseSchema } from '../worker/parse-schema.ts';
import { requestHash } from '../worker/request-hash.ts';
import { checkPayloadDepth } from './check-payload-depth.ts';
import type { EnqueueOutboxOptions } from './enqueue-outbox.ts';
import { InvalidOutboxEnvelopeError, OutboxUsageError } from './errors.ts';

/**
 * Largest message body the outbox accepts by default, in bytes (UTF-8 of the envelope JSON): 1 MiB, the SQS
 * maximum. A queue configured with a smaller `MaximumMessageSize` needs `maxMessageBytes` set to it.
 *
 * @internal
 */
export const OUTBOX_MAX_MESSAGE_BYTES = 1_048_576;

/**
 * An envelope ready to be stored in an outbox: validated, its payload offloaded when it had to be, with the request
 * hash the consumer will compute and the trace it travels with.
 *
 * @internal
 */
export interface PreparedOutboxEnvelope {
  readonly envelope: Envelope;
  /** The consumer's request hash of the envelope (`requestHash`): the outbox's test of "the same event". */
  readonly requestHash: string;
  /** The X-Ray trace header the relay sends with the message. */
  readonly traceHeader: string;
  /** Its trace id (`1-…-…`). */
  readonly traceId: string | undefined;
}

/**
 * What a store adds to the queue's limit: the largest envelope its outbox record holds (DynamoDB: an item holds
 * 400 KB), with the words of the refusal.
 *
 * @internal
 */
export interface OutboxStoreLimit {
  readonly maxBytes: number;
  /** What the limit is, for the message: "a DynamoDB item's limit of …". */
  readonly describe: string;
}

/**
 * The checks every outbox runs before it stores an envelope (pattern document §16), whichever store holds it:
 * `envelopeSchema`, a payload nested at most `MAX_PAYLOAD_DEPTH` levels, and a size within the queue's message limit
 * (less the relay's `traceparent` attribute) and the store's — the payload offloaded to S3 first with `offload`; the
 * trace recorded from `trace`, the Lambda invocation or a new one.
 *
 * @throws InvalidOutboxEnvelopeError when the envelope is invalid, too deep or too large.
 * @throws OutboxOffloadError when the payload could not be written to S3.
 * @throws OutboxUsageError when `maxMessageBytes` or `trace` is not valid.
 *
 * @internal
 */
export async function prepareOutboxEnvelope(
  envelope: Envelope,
  options: EnqueueOutboxOptions,
  store?: OutboxStoreLimit,
): Promise<PreparedOutboxEnvelope> {
  const parsed = parseSchema(envelopeSchema, envelope);
  if (!parsed.success) {
    throw new InvalidOutboxEnvelopeError(`Invalid outbox envelope: ${describeIssues(parsed.error)}`);
  }
  // Before anything serializes it: JSON.stringify overflows the stack on a few thousand levels.
  checkPayloadDepth(parsed.data);
  const queueMaxBytes = options.maxMessageBytes ?? OUTBOX_MAX_MESSAGE_BYTES;
  if (!Number.isInteger(queueMaxBytes) || queueMaxBytes < 1024 || queueMaxBytes > OUTBOX_MAX_MESSAGE_BYTES) {
    throw new OutboxUsageError(
      `maxMessageBytes must be the queue's MaximumMessageSize, a whole number from 1024 to ${OUTBOX_MAX_MESSAGE_BYTES} (given ${queueMaxBytes})`,
    );
  }
  const traceHeader = formatXRayTraceHeader(withParentId(producerTrace(options.trace)));
  // SQS counts message attributes in the message size: the relay's traceparent attribute must fit beside the body.
  const queueBytes = queueMaxBytes - TRACEPARENT_ATTRIBUTE_BYTES;
  const maxBytes = Math.min(queueBytes, store?.maxBytes ?? queueBytes);
  const offloadAbove = Math.min(options.offload?.offloadAboveBytes ?? maxBytes, maxBytes);
  let valid = parsed.data;
  let bytes = Buffer.byteLength(JSON.stringify(valid), 'utf8');
  if (bytes > offloadAbove && options.offload && valid.payload !== undefined) {
    const { offloadPayload } = await import('./offload-payload.ts');
    valid = await offloadPayload(options.offload, valid);
    bytes = Buffer.byteLength(JSON.stringify(valid), 'utf8');
  }
  if (bytes > maxBytes) throw tooLarge(valid.idempotencyKey, bytes, queueMaxBytes, options, store);
  return {
    envelope: valid,
    requestHash: requestHash(valid),
    traceHeader,
    traceId: parseXRayTraceHeader(traceHeader)?.traceId,
  };
}

/** The refusal of an envelope above the queue's (or the store's) limit, naming both and the fix. */
function tooLarge(
  key: string,
  bytes: number,
  queueMaxBytes: number,
  options: EnqueueOutboxOptions,
  store: OutboxStoreLimit | undefined,
): InvalidOutboxEnvelopeError {
  const storeLimited = store !== undefined && store.maxBytes < queueMaxBytes - TRACEPARENT_ATTRIBUTE_BYTES;
  const limit = storeLimited
    ? `${store.describe} (the queue's message limit is ${queueMaxBytes})`
    : `the queue's message limit of ${queueMaxBytes}`;
  return new InvalidOutboxEnvelopeError(
    `Outbox envelope ${key} is ${bytes} bytes (+${TRACEPARENT_ATTRIBUTE_BYTES} for its traceparent attribute), above ${limit}; ${
      options.offload
        ? 'its payload is in S3 already: shorten the other envelope fields'
        : 'pass `offload` ({ s3, bucket }) to send the payload by reference (payloadRef), or send smaller payloads'
    }`,
  );
}

/**
 * The trace a new outbox record travels with: the caller's (`trace`), else the Lambda invocation's X-Ray header, else
 * a new one. The invocation's header is read at call time, not from the configuration: Lambda sets it per
 * invocation (`_X_AMZN_TRACE_ID`, or the runtime's invoke store when one environment serves several invocations
 * at once). Even in PassThrough mode (tracing off) Lambda gives every invocation a trace id, so the producer's
 * own log lines (Powertools `xray_trace_id`) carry the same id as the worker's.
 */
function producerTrace(trace: string | undefined) {
  if (trace !== undefined) {
    const given = parseTraceContext(trace);
    if (!given) {
      throw new OutboxUsageError(
        `trace must be an X-Ray trace header (Root=1-<8 hex>-<24 hex>;Parent=<16 hex>;Sampled=0|1) or a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>) (given ${JSON.stringify(trace.slice(0, 120))}); pass the header your tracer gives, or leave trace out to use the Lambda invocation's`,
      );
    }
    return given;
  }
  const invoke = (
    globalThis as { awslambda?: { InvokeStore?: { getXRayTraceId?: () => string | undefined } } }
  ).awslambda?.InvokeStore;
  return (
    parseXRayTraceHeader(invoke?.getXRayTraceId?.() ?? process.env._X_AMZN_TRACE_ID) ?? newTraceContext()
  );
}
