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

/** A NUL, or a UTF-16 surrogate that is not half of a pair (a JSON escape such as `\ud800` makes one). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is the character this looks for
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * True when both stores keep `value` as it is: PostgreSQL text cannot hold a NUL at all (the write fails, the
 * quarantine's too), and stores a lone surrogate as U+FFFD, so two keys that differ only there would be one key.
 * The envelope's identifiers must be such text; the payload may hold anything JSON can.
 *
 * @internal
 */
export const isStorableText = (value: string): boolean => !UNSTORABLE.test(value);

const storable = z.refine((value: unknown) => typeof value !== 'string' || isStorableText(value), {
  message: 'must be well-formed Unicode without NUL (U+0000) or an unpaired surrogate such as \\ud800',
});

/** A string of 1 to `max` characters that both stores keep as it is. */
const text = (max: number) => z.string().check(z.minLength(1), z.maxLength(max), storable);

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
 * A payload stored in S3 instead of the message (pattern document §22): the object is read before the inbox
 * transaction, and its size and SHA-256 must match before a handler sees it (docs/large-payloads.md).
 *
 * @internal
 */
export const payloadRefSchema = z.object({
  /** Bucket name (S3 rules: 3–63 characters). */
  bucket: z.string().check(z.minLength(3), z.maxLength(63), z.regex(/^[a-z0-9][a-z0-9.-]*[a-z0-9]$/)),
  /** Object key. */
  key: text(1024),
  /** The object version to read (versioned buckets); without it the current version is read. */
  versionId: z.nullish(text(1024)),
  /** SHA-256 of the object's bytes, 64 lowercase hex digits. */
  sha256: z.string().check(z.regex(/^[0-9a-f]{64}$/)),
  /** Size of the object in bytes. */
  size: z.int().check(z.minimum(0)),
});

/**
 * The stable envelope every message carries (pattern document §4). Lengths fit the inbox columns, so a
 * valid envelope can always be recorded. The payload travels inline (`payload`) or in S3 (`payloadRef`):
 * exactly one of the two.
 *
 * @internal
 */
export const envelopeSchema = z
  .object({
    messageId: text(ENVELOPE_LIMITS.messageId),
    schemaVersion: z.int().check(z.minimum(1)),
    messageType: text(ENVELOPE_LIMITS.messageType),
    producer: text(ENVELOPE_LIMITS.producer),
    occurredAt: isoDateTime,
    idempotencyKey: text(ENVELOPE_LIMITS.idempotencyKey),
    aggregateType: text(ENVELOPE_LIMITS.aggregateType),
    aggregateId: text(ENVELOPE_LIMITS.aggregateId),
    causationId: z.nullish(z.string().check(z.maxLength(200), storable)),
    correlationId: z.nullish(z.string().check(z.maxLength(ENVELOPE_LIMITS.correlationId), storable)),
    attemptPolicy: z.nullish(attemptPolicySchema),
    payload: z.optional(z.record(z.string(), z.unknown())),
    payloadRef: z.optional(payloadRefSchema),
  })
  .check(
    z.refine((envelope) => (envelope.payload === undefined) !== (envelope.payloadRef === undefined), {
      message:
        'give exactly one of payload (inline) and payloadRef (an S3 object); a payload too large for the message goes to S3 as payloadRef',
      path: ['payload'],
    }),
  );

/** A validated envelope. */
export type Envelope = z.infer<typeof envelopeSchema>;

/** A validated `payloadRef`: where the payload is in S3 and what its bytes must hash to. */
export type PayloadRef = z.infer<typeof payloadRefSchema>;

/** The attempt policy of an envelope. */
export type AttemptPolicy = z.infer<typeof attemptPolicySchema>;
