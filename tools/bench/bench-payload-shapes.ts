import * as z from 'zod/mini';
import { defineHandler } from '../../lambda/index.ts';

/** The JSON payload shapes the payload-memory bench measures. */
export type BenchPayloadShape = 'records' | 'numbers';

/** One line of a `records` payload. */
const recordLine = z.object({
  id: z.string(),
  sku: z.string(),
  quantity: z.number(),
  amount: z.string(),
  note: z.string(),
});

/**
 * The bench's message types, one per shape, each sent by reference. Their schemas keep every value (a handler
 * that needs its data), so the validated copy the engine hands over is as large as a real handler's would be; each
 * handler reads its payload inside its transaction (one statement).
 *
 * @internal
 */
export const benchPayloadHandlers = [
  defineHandler({
    messageType: 'BenchRecordsImported',
    schemaVersion: 1,
    payload: z.object({ items: z.array(recordLine) }),
    async handle({ sql, payload }) {
      await sql`select ${payload.items.length}::int as lines`;
      return undefined;
    },
  }),
  defineHandler({
    messageType: 'BenchNumbersImported',
    schemaVersion: 1,
    payload: z.object({ values: z.array(z.number()) }),
    async handle({ sql, payload }) {
      await sql`select ${payload.values.length}::int as values`;
      return undefined;
    },
  }),
];

/** The message type of each shape. */
export const BENCH_MESSAGE_TYPES: Readonly<Record<BenchPayloadShape, string>> = {
  records: 'BenchRecordsImported',
  numbers: 'BenchNumbersImported',
};

/**
 * A payload of `shape` of about `bytes` bytes (never more), ASCII JSON. `records`: lines of ~110 bytes with five
 * fields, the shape of a typical large payload (many small records); `numbers`: an array of small integers, about
 * the densest JSON there is (a value every 4 bytes), the most a byte of JSON grows when parsed. `seed` makes
 * objects of the same size differ.
 *
 * @internal
 */
export function benchPayloadJson(shape: BenchPayloadShape, bytes: number, seed = 0): Buffer {
  const parts: string[] = [];
  const [open, close] = shape === 'records' ? ['{"items":[', ']}'] : ['{"values":[', ']}'];
  let length = open.length + close.length - 1;
  for (let i = 0; ; i += 1) {
    const part =
      shape === 'records'
        ? JSON.stringify({
            id: `line-${seed}-${i}`,
            sku: `SKU-${(i * 7919) % 100_000}`,
            quantity: i % 7,
            amount: `${i % 1000}.25`,
            note: 'lorem ipsum dolor sit amet, consectetur adipiscing',
          })
        : String((i * 7919 + seed) % 1000);
    if (length + part.length + 1 > bytes) break;
    parts.push(part);
    length += part.length + 1;
  }
  return Buffer.from(`${open}${parts.join(',')}${close}`);
}
