/**
 * A JSON value nested `levels` deep: `levels` arrays, one inside the other, around a 0 (`nestedArrays(2)` is
 * `[[0]]`). Built without recursion, so any depth can be made; but `JSON.stringify` overflows the stack on a few
 * thousand levels: make the text of a deeper body with {@link jsonWithNestedArrays}.
 */
export function nestedArrays(levels: number): unknown {
  let value: unknown = 0;
  for (let level = 0; level < levels; level += 1) value = [value];
  return value;
}

/** The placeholder {@link jsonWithNestedArrays} replaces. */
export const NESTED = '<nested arrays>';

/**
 * The JSON text of `value` with the string value {@link NESTED} (its first occurrence) replaced by `levels` nested
 * arrays around a 0, written as text.
 */
export function jsonWithNestedArrays(value: unknown, levels: number): string {
  const text = JSON.stringify(value);
  if (!text.includes(`"${NESTED}"`)) throw new Error(`jsonWithNestedArrays: no "${NESTED}" value to replace`);
  return text.replace(`"${NESTED}"`, `${'['.repeat(levels)}0${']'.repeat(levels)}`);
}
