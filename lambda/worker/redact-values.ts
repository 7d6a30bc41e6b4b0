/** What replaces a value of the input found in a text. */
export const VALUE_PLACEHOLDER = '<value>';

/** Leaves of the input looked at, at most: the text is short, and a huge payload must not cost a long scan. */
const MAX_LEAVES = 200;

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * `text` with every value of `input` it quotes replaced by `<value>`: the input itself when it is a string or a
 * number, else its string and number leaves (the first 200, breadth first). A safety net for texts written by
 * others that the engine logs and stores — a handler's error message, a refinement's message — not a licence
 * to put values in them: a value shorter than three characters, or one the text quotes transformed (upper-cased,
 * cut), stays. Keys are left, as they are mostly the schema's own field names; numbers are replaced only as
 * whole numbers (`100` not inside `1000`).
 *
 * @example
 * ```ts
 * redactValues('case CASE-7 does not exist', { caseId: 'CASE-7' }); // 'case <value> does not exist'
 * ```
 *
 * @internal
 */
export function redactValues(text: string, input: unknown): string {
  const strings = new Set<string>();
  const numbers = new Set<string>();
  const queue: unknown[] = [input];
  for (let seen = 0; queue.length > 0 && seen < MAX_LEAVES; seen += 1) {
    const value = queue.shift();
    if (typeof value === 'string') strings.add(value);
    else if (typeof value === 'number' || typeof value === 'bigint') numbers.add(String(value));
    else if (value instanceof Map) queue.push(...value.values());
    else if (value instanceof Set || Array.isArray(value)) queue.push(...value);
    else if (typeof value === 'object' && value !== null) queue.push(...Object.values(value));
  }
  // One pass, longest first, so that a short value never matches inside a placeholder already written.
  const fits = (piece: string) => piece.length >= 3 && piece.length <= text.length;
  const alternatives = [
    ...[...strings].filter(fits).map(escapeRegExp),
    ...[...numbers].filter(fits).map((piece) => `(?<![\\d.])${escapeRegExp(piece)}(?![\\d.])`),
  ].sort((a, b) => b.length - a.length);
  return alternatives.length === 0
    ? text
    : text.replace(new RegExp(alternatives.join('|'), 'g'), VALUE_PLACEHOLDER);
}
