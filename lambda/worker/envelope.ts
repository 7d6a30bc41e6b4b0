// Namespace import (not `import { z }`): it lets esbuild drop zod's locales and JSON Schema code (~350 KiB) from the bundle.
import * as z from 'zod';

/** Limits that match the columns of `worker_inbox` (see migrations/00001). */
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

/** Business retry policy carried by the message (the pattern document's `attemptPolicy`). */
export const attemptPolicySchema = z.object({
  /** After this many failed attempts a retryable failure becomes terminal. */
  maxBusinessAttempts: z.number().int().min(1).max(1000).nullish(),
  /** The message must not be processed before this instant. */
  notBefore: isoDateTime.nullish(),
  /** After this instant a retryable failure becomes terminal. */
  retryableUntil: isoDateTime.nullish(),
  /** Failure codes that are terminal for this message even when they would be retryable. */
  terminalAfterCodes: z.array(z.string().min(1).max(ENVELOPE_LIMITS.failureCode)).max(50).nullish(),
});

/**
 * The stable envelope every message carries (pattern document §4). Lengths fit the inbox columns, so a
 * valid envelope can always be recorded.
 */
export const envelopeSchema = z.object({
  messageId: z.string().min(1).max(ENVELOPE_LIMITS.messageId),
  schemaVersion: z.number().int().min(1),
  messageType: z.string().min(1).max(ENVELOPE_LIMITS.messageType),
  producer: z.string().min(1).max(ENVELOPE_LIMITS.producer),
  occurredAt: isoDateTime,
  idempotencyKey: z.string().min(1).max(ENVELOPE_LIMITS.idempotencyKey),
  aggregateType: z.string().min(1).max(ENVELOPE_LIMITS.aggregateType),
  aggregateId: z.string().min(1).max(ENVELOPE_LIMITS.aggregateId),
  causationId: z.string().max(200).nullish(),
  correlationId: z.string().max(ENVELOPE_LIMITS.correlationId).nullish(),
  attemptPolicy: attemptPolicySchema.nullish(),
  payload: z.record(z.string(), z.unknown()),
});

/** A validated envelope. */
export type Envelope = z.infer<typeof envelopeSchema>;

/** The attempt policy of an envelope. */
export type AttemptPolicy = z.infer<typeof attemptPolicySchema>;

/**
 * Describes zod issues by path and rule only. Zod's messages name the expected type or bound, never the
 * received value, so the result is safe to log and store.
 */
export function describeIssues(error: z.ZodError, prefix = ''): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${prefix}${issue.path.map(String).join('.') || '(root)'}: ${issue.message}`)
    .join('; ');
}
