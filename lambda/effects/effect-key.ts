import { createHash } from 'node:crypto';

/**
 * Longest `external_effect_log.effect_key`.
 *
 * @internal
 */
export const EFFECT_KEY_MAX = 200;

/** Length kept of `<consumer>/<operation>` in front of a hashed key. */
const HASHED_PREFIX_MAX = EFFECT_KEY_MAX - 72;

/**
 * The effect key of one external effect caused by one message in one consumer:
 * `<consumer>/<operation>:<message idempotency key>`, or `<consumer>/<operation>:sha256:<hex of all three>` (the
 * prefix cut to fit) when that would exceed {@link EFFECT_KEY_MAX} characters. Deterministic, so every redelivery
 * of the message (and every retry of the effect) uses the same key with the provider. The consumer is part of it:
 * two workers that share a database and receive the same message each cause their own effect
 * (`migrations/00006_effect-keys-per-consumer.sql` computes the same key for rows written before).
 *
 * @example
 * ```ts
 * effectKey(consumer, 'escalation-notification', envelope.idempotencyKey);
 * // 'case-worker/escalation-notification:case-7:esc-1'
 * ```
 */
export function effectKey(consumer: string, operation: string, idempotencyKey: string): string {
  const prefix = `${consumer}/${operation}`;
  const readable = `${prefix}:${idempotencyKey}`;
  if (readable.length <= EFFECT_KEY_MAX) return readable;
  return `${prefix.slice(0, HASHED_PREFIX_MAX)}:sha256:${createHash('sha256').update(readable).digest('hex')}`;
}
