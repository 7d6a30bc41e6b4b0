// zod/mini (not 'zod'): the same parser without the method-chaining layer, which costs every cold start ~10 ms
// (docs/performance.md). Handlers may use either; the engine parses through parse-schema.ts.
import * as z from 'zod/mini';

/**
 * Limits that match the columns of `worker_inbox` (see migrations/00001).
 *
 * @internal
 */
export const ENVELOPE_LIMITS = {
  idempotencyKey: 200,
  messageType: 100,
  aggregateType: 100,
  aggregateId: 200,
  messageId: 100,
  producer: 100,
  correlationId: 200,
  failureCode: 100,
} as const;

const isoDateTime = z.iso.datetime({ offset: true });
/** A string of 1 to `max` characters. */
const text = (max: number) => z.string().check(z.minLength(1), z.maxLength(max));

/**
 * Business retry policy carried by the message (the pattern document's `attemptPolicy`).
 *
 * @internal
 */
export const attemptPolicySchema = z.object({
  /** After this many failed attempts a retryable failure becomes terminal. */
  maxBusinessAttempts: z.nullish(z.int().check(z.minimum(1), z.maximum(1000))),
  /** The message must not be processed before this instant. */
  notBefore: z.nullish(isoDateTime),
  /** After this instant a retryable failure becomes terminal. */
  retryableUntil: z.nullish(isoDateTime),
  /** Failure codes that are terminal for this message even when they would be retryable. */
  terminalAfterCodes: z.nullish(z.array(text(ENVELOPE_LIMITS.failureCode)).check(z.maxLength(50))),
});

/**
 * The stable envelope every message carries (pattern document §4). Lengths fit the inbox columns, so a
 * valid envelope can always be recorded.
 *
 * @internal
 */
export const envelopeSchema = z.object({
  messageId: text(ENVELOPE_LIMITS.messageId),
  schemaVersion: z.int().check(z.minimum(1)),
  messageType: text(ENVELOPE_LIMITS.messageType),
  producer: text(ENVELOPE_LIMITS.producer),
  occurredAt: isoDateTime,
  idempotencyKey: text(ENVELOPE_LIMITS.idempotencyKey),
  aggregateType: text(ENVELOPE_LIMITS.aggregateType),
  aggregateId: text(ENVELOPE_LIMITS.aggregateId),
  causationId: z.nullish(z.string().check(z.maxLength(200))),
  correlationId: z.nullish(z.string().check(z.maxLength(ENVELOPE_LIMITS.correlationId))),
  attemptPolicy: z.nullish(attemptPolicySchema),
  payload: z.record(z.string(), z.unknown()),
});

/** A validated envelope. */
export type Envelope = z.infer<typeof envelopeSchema>;

/** The attempt policy of an envelope. */
export type AttemptPolicy = z.infer<typeof attemptPolicySchema>;
