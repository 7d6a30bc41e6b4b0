/**
 * Cuts a text to at most `maxBytes` bytes of UTF-8, at a character boundary (never half a character), ending in
 * `marker` when it was cut (the marker's bytes count against `maxBytes`). A text that fits is returned as it is.
 *
 * @example
 * ```ts
 * cutUtf8('déjà vu', 6, '…'); // 'dé…': d, é and … are 1 + 2 + 3 bytes
cutUtf8('déjà vu', 5, '…'); // 'd…': the é would be cut in half
 * ```
 *
 * @internal
 */
export function cutUtf8(text: string, maxBytes: number, marker = ''): string {
  if (Buffer.byteLength(text, 'utf8') <= maxBytes) return text;
  const bytes = Buffer.from(text, 'utf8');
  let end = Math.max(0, maxBytes - Buffer.byteLength(marker, 'utf8'));
  // bytes[end] is the first byte left out: while it continues a character (10xxxxxx), that character is cut too.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end -= 1;
  return `${bytes.subarray(0, end).toString('utf8')}${marker}`;
}
