import { createHash } from 'node:crypto';

/**
 * Longest `external_effect_log.effect_key`.
 *
 * @internal
 */
export const EFFECT_KEY_MAX = 200;

/**
 * The effect key of one external effect caused by one message: `<operation>:<message idempotency key>`, or
 * `<operation>:sha256:<hex>` when that would exceed {@link EFFECT_KEY_MAX} characters. Deterministic, so every
 * redelivery of the message (and every retry of the effect) uses the same key with the provider.
 *
 * @example
 * ```ts
 * effectKey('escalation-notification', envelope.idempotencyKey); // 'escalation-notification:case-7:esc-1'
 * ```
 */
export function effectKey(operation: string, idempotencyKey: string): string {
  const readable = `${operation}:${idempotencyKey}`;
  if (readable.length <= EFFECT_KEY_MAX) return readable;
  return `${operation.slice(0, EFFECT_KEY_MAX - 72)}:sha256:${createHash('sha256').update(idempotencyKey).digest('hex')}`;
}
