/**
 * The largest item DynamoDB stores, in bytes: "The maximum item size in DynamoDB is 400 KB, which includes both
 * attribute name binary length (UTF-8 length) and attribute value lengths (again binary length)", and "DynamoDB
 * denotes 1 KB = 1024 bytes" (AWS, Amazon DynamoDB Developer Guide, "Constraints in Amazon DynamoDB", Items). A
 * write whose item would be larger fails with `ValidationException` "Item size has exceeded the maximum allowed
 * size" ("Item size to update …" for UpdateItem and TransactWriteItems); DynamoDB Local refuses 409,601 bytes and
 * stores 409,600 (`test/integration/dynamodb-item-size.test.ts`).
 *
 * @internal
 */
export const DYNAMODB_MAX_ITEM_BYTES = 400 * 1024;

const utf8 = (text: string) => Buffer.byteLength(text, 'utf8');

/**
 * The size of an item as DynamoDB counts it against {@link DYNAMODB_MAX_ITEM_BYTES}, for an item in the document
 * client's native form (`undefined` attributes are left out, as `removeUndefinedValues` does). The rules are AWS's
 * ("DynamoDB item sizes and formats", Amazon DynamoDB Developer Guide):
 *
 * - an attribute is the UTF-8 length of its name plus the size of its value;
 * - a string is its UTF-8 length; a binary value its raw length (not its base64); null and a boolean 1 byte;
 * - a number "approximately 1 byte per two significant digits + 1 byte" — counted here as DynamoDB Local counts it:
 *   1 byte, plus 1 per pair of decimal digits aligned on the decimal point (leading and trailing zero pairs
 *   trimmed), plus 1 when negative (123.456 is `01 23 . 45 60`: 5 bytes; 1200 is `12 00`: 2 bytes);
 * - a list or map 3 bytes plus its elements, each element 1 byte more (a map entry: its key's UTF-8 length, its
 *   value, 1 byte).
 *
 * The guide gives no rule for sets: a set is counted as a list, which is never less than DynamoDB Local counts.
 *
 * @internal
 */
export function dynamoItemSize(item: Readonly<Record<string, unknown>>): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) {
    if (value !== undefined) size += utf8(name) + dynamoValueSize(value);
  }
  return size;
}

/**
 * The size of one attribute value as {@link dynamoItemSize} counts it (without its name).
 *
 * @internal
 */
export function dynamoValueSize(value: unknown): number {
  if (typeof value === 'string') return utf8(value);
  if (typeof value === 'number' || typeof value === 'bigint') return numberSize(value);
  if (typeof value === 'boolean' || value === null) return 1;
  if (value instanceof Uint8Array) return value.byteLength;
  if (Array.isArray(value) || value instanceof Set) {
    let size = 3;
    for (const element of value) if (element !== undefined) size += 1 + dynamoValueSize(element);
    return size;
  }
  if (typeof value === 'object') {
    let size = 3;
    for (const [key, element] of Object.entries(value as Record<string, unknown>)) {
      if (element !== undefined) size += 1 + utf8(key) + dynamoValueSize(element);
    }
    return size;
  }
  return utf8(String(value));
}

/** A number's size: 1 byte, its base-100 digits aligned on the decimal point, 1 byte more when negative. */
function numberSize(value: number | bigint): number {
  const text = typeof value === 'bigint' ? value.toString() : Math.abs(value).toString();
  const negative = typeof value === 'bigint' ? value < 0n : value < 0;
  const [mantissa = '', exponent = '0'] = text.replace('-', '').toLowerCase().split('e');
  const [whole = '', fraction = ''] = mantissa.split('.');
  const digits = `${whole}${fraction}`;
  const leading = digits.length - digits.replace(/^0+/, '').length;
  const significant = digits.replace(/^0+/, '').replace(/0+$/, '');
  if (significant === '') return 1; // zero
  // Digits of `significant` before the decimal point (negative: zeros between the point and the first digit).
  const point = whole.length + Number(exponent) - leading;
  const padLeft = ((point % 2) + 2) % 2;
  return 1 + Math.ceil((padLeft + significant.length) / 2) + (negative ? 1 : 0);
}
