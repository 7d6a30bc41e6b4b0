/**
 * Deepest nesting of objects and arrays a payload may have, the payload object itself being level 1 (so a message
 * body, which wraps the payload in its envelope, nests at most one level more). Deeper payloads are refused by the
 * producer (`enqueueOutbox`, `offloadPayload`) and quarantined by the worker as `PAYLOAD_TOO_DEEP`: far below the
 * depth at which JavaScript's recursive JSON code (JSON.stringify, a recursive schema) overflows the stack, and far
 * above what a payload needs. Why this value and how it compares: docs/semantics.md, "Depth and size of a message".
 */
export const MAX_PAYLOAD_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * The deepest nesting of objects and arrays in a JSON text (`{}` is 1, `[{"a": [1]}]` is 3, a string or a number 0),
 * found by one scan of the text: no parse, no recursion, nothing allocated. Brackets inside strings are skipped.
 * Exact for valid JSON (parse it first); for anything else a count without meaning.
 *
 * @internal
 */
export function jsonTextDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  const length = text.length;
  for (let index = 0; index < length; index += 1) {
    const code = text.charCodeAt(index);
    if (code === QUOTE) {
      // Jump to the closing quote: the next quote not escaped by an odd run of backslashes.
      let end = text.indexOf('"', index + 1);
      while (end !== -1) {
        let backslashes = 0;
        while (text.charCodeAt(end - 1 - backslashes) === BACKSLASH) backslashes += 1;
        if (backslashes % 2 === 0) break;
        end = text.indexOf('"', end + 1);
      }
      if (end === -1) return deepest;
      index = end;
    } else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      depth += 1;
      if (depth > deepest) deepest = depth;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
      depth -= 1;
    }
  }
  return deepest;
}

/**
 * The deepest nesting of objects and arrays in `value` as `JSON.stringify` would write it (`toJSON` applied, so a
 * Date is a string), counted without recursion and no further than `limit + 1`: a value deeper than `limit` (or a
 * cycle) answers `limit + 1` after visiting at most the levels up to it.
 *
 * @internal
 */
export function jsonDepth(value: unknown, limit: number): number {
  let deepest = 0;
  const pending: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    let member = next.value;
    if (
      member !== null &&
      typeof member === 'object' &&
      typeof (member as { toJSON?: unknown }).toJSON === 'function'
    ) {
      member = (member as { toJSON(): unknown }).toJSON();
    }
    if (member === null || typeof member !== 'object') continue;
    const depth = next.depth + 1;
    if (depth > limit) return limit + 1;
    if (depth > deepest) deepest = depth;
    for (const child of Array.isArray(member) ? member : Object.values(member)) {
      if (child !== null && typeof child === 'object') pending.push({ value: child, depth });
    }
  }
  return deepest;
}
