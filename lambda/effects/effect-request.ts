import { createHash } from 'node:crypto';
import { JsonTooDeepError, RetryableError, TerminalError } from '../errors.ts';
import { describeUnknownError } from '../worker/classify-error.ts';
import { MAX_PAYLOAD_DEPTH } from '../worker/json-depth.ts';
import { canonicalJson } from '../worker/request-hash.ts';
import { EFFECT_KEY_MAX } from './effect-key.ts';

/** Longest error text an effect log keeps (`last_error`, `lastError`). */
const MAX_ERROR = 500;

const truncate = (text: string) => (text.length > MAX_ERROR ? `${text.slice(0, MAX_ERROR - 1)}…` : text);

/**
 * The names of an effect checked before anything is written, whichever store keeps its log: the key (≤
 * {@link EFFECT_KEY_MAX} characters), the provider and the operation (≤ 100 each).
 *
 * @throws TerminalError `EFFECT_INVALID` naming the value.
 * @internal
 */
export function checkEffectNames(effect: { effectKey: string; provider: string; operation: string }): void {
  for (const [name, value, max] of [
    ['effectKey', effect.effectKey, EFFECT_KEY_MAX],
    ['provider', effect.provider, 100],
    ['operation', effect.operation, 100],
  ] as const) {
    if (typeof value !== 'string' || value.length < 1 || value.length > max) {
      throw new TerminalError(
        'EFFECT_INVALID',
        `External effect ${name} must be 1 to ${max} characters (given "${value}")`,
      );
    }
  }
}

/**
 * What an effect log keeps of a failed call: the code and message of a worker error, else a description of the
 * error, cut at 500 characters.
 *
 * @internal
 */
export function describeEffectError(error: unknown): string {
  if (error instanceof RetryableError || error instanceof TerminalError)
    return truncate(`${error.code}: ${error.message}`);
  return truncate(describeUnknownError(error));
}

/**
 * sha256 (hex) of the canonical JSON of an effect's provider, operation and request: what a retry must send again.
 * A request nested deeper than a payload may be is refused as `EFFECT_INVALID` (terminal) before anything is written.
 *
 * @internal
 */
export function effectRequestHash(
  effectKey: string,
  effect: { provider: string; operation: string; request: unknown },
): string {
  let canonical: string;
  try {
    canonical = canonicalJson(effect);
  } catch (error) {
    if (!(error instanceof JsonTooDeepError)) throw error;
    throw new TerminalError(
      'EFFECT_INVALID',
      `External effect ${effectKey}: its request nests more than ${MAX_PAYLOAD_DEPTH} levels of objects and arrays (the bound of a payload, docs/semantics.md); send a flatter request`,
    );
  }
  return createHash('sha256').update(canonical).digest('hex');
}
