import { hash } from 'node:crypto';
import { JsonTooDeepError } from '../errors.ts';
import { MAX_PAYLOAD_DEPTH } from './json-depth.ts';

/**
 * JSON with object keys sorted at every depth, so that two payloads that differ only in key order serialize
 * the same. Array order is kept (it is meaningful); `undefined` members are dropped as JSON.stringify does.
 *
 * No value can overflow the stack: JSON.stringify recurses once per level (a few thousand levels overflow), so the
 * replacer counts each object's level and throws {@link JsonTooDeepError} past `maxDepth` before it goes deeper.
 * The level is looked up from the holder (`this`), which is the copy or array the replacer returned one level up.
 * A cycle is refused the same way: each object is serialized as a fresh sorted copy, which JSON.stringify's own
 * cycle check cannot see.
 *
 * @param maxDepth deepest nesting of objects and arrays allowed; the default fits a payload of the bound
 *   ({@link MAX_PAYLOAD_DEPTH}) inside the one object that carries it (the request hash's input, an effect's request)
 * @throws JsonTooDeepError when `value` nests deeper than `maxDepth`.
 *
 * @internal
 */
export function canonicalJson(value: unknown, maxDepth = MAX_PAYLOAD_DEPTH + 1): string {
  const levels = new Map<unknown, number>();
  return JSON.stringify(value, function (this: unknown, _key, member: unknown) {
    if (member === null || typeof member !== 'object') return member;
    const level = (levels.get(this) ?? 0) + 1;
    if (level > maxDepth) throw new JsonTooDeepError(maxDepth);
    let serialized: object = member;
    if (!Array.isArray(member)) {
      const sorted: Record<string, unknown> = {};
      for (const key of Object.keys(member).sort()) sorted[key] = (member as Record<string, unknown>)[key];
      serialized = sorted;
    }
    levels.set(serialized, level);
    return serialized;
  });
}

/**
 * The request hash stored with an idempotency key: sha256 (hex) of the canonical JSON of messageType,
 * schemaVersion and payload. The same for any key order; different when any value differs.
 *
 * A payload sent by reference (`payloadRef`) is hashed by what the object is, not where it is: its `sha256` and
 * `size`. The same key with another object is a hash mismatch; the same bytes copied to another bucket, key or
 * version (a re-upload, a bucket migration before a redrive) are the same request. An inline payload hashes as
 * it always did, so hashes already stored stay valid.
 *
 * @throws JsonTooDeepError when the payload nests deeper than {@link MAX_PAYLOAD_DEPTH} levels.
 *
 * @example
 * ```ts
 * requestHash({ messageType: 'PaymentCaptured', schemaVersion: 1, payload: { paymentId: 'p-1' } });
 * ```
 *
 * @internal
 */
export function requestHash(input: {
  messageType: string;
  schemaVersion: number;
  payload?: unknown;
  payloadRef?: { sha256: string; size: number } | undefined;
}): string {
  const canonical = canonicalJson(
    input.payloadRef !== undefined && input.payload === undefined
      ? {
          messageType: input.messageType,
          schemaVersion: input.schemaVersion,
          payloadRef: { sha256: input.payloadRef.sha256, size: input.payloadRef.size },
        }
      : { messageType: input.messageType, schemaVersion: input.schemaVersion, payload: input.payload },
  );
  // One-shot `hash` (Node ≥ 20.12): a few µs cheaper per record than building a Hash object.
  return hash('sha256', canonical, 'hex');
}
