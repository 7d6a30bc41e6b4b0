/**
 * SendMessageBatch accepts at most 10 entries.
 *
 * @internal
 */
export const SQS_MAX_BATCH_ENTRIES = 10;

/**
 * SendMessageBatch payload limit used by default: 256 KiB for the sum of all entries.
 *
 * @internal
 */
export const SQS_MAX_BATCH_BYTES = 262_144;

/**
 * Limits of {@link planSendBatches}.
 *
 * @internal
 */
export interface SendBatchLimits {
  /** Entries per batch, 1–10. @default 10 */
  readonly maxEntries?: number;
  /** Sum of entry sizes per batch, in bytes. @default 262144 */
  readonly maxBytes?: number;
}

/**
 * Splits items into SendMessageBatch calls of at most `maxEntries` entries whose sizes add up to at most
 * `maxBytes`, keeping the input order. An item larger than `maxBytes` on its own goes alone in a batch (SQS
 * then rejects that entry, which is reported and retried like any failed entry, instead of failing its
 * neighbours).
 *
 * @param items the entries, in send order.
 * @param size the size of one entry in bytes (body plus message attributes, as SQS counts it).
 *
 * @internal
 */
export function planSendBatches<T>(
  items: readonly T[],
  size: (item: T) => number,
  limits: SendBatchLimits = {},
): T[][] {
  const maxEntries = limits.maxEntries ?? SQS_MAX_BATCH_ENTRIES;
  const maxBytes = limits.maxBytes ?? SQS_MAX_BATCH_BYTES;
  if (!Number.isInteger(maxEntries) || maxEntries < 1 || maxEntries > SQS_MAX_BATCH_ENTRIES) {
    throw new RangeError(
      `maxEntries must be a whole number from 1 to ${SQS_MAX_BATCH_ENTRIES} (given ${maxEntries})`,
    );
  }
  if (!(maxBytes > 0))
    throw new RangeError(`maxBytes must be a positive number of bytes (given ${maxBytes})`);

  const batches: T[][] = [];
  let current: T[] = [];
  let currentBytes = 0;
  for (const item of items) {
    const bytes = size(item);
    if (current.length > 0 && (current.length === maxEntries || currentBytes + bytes > maxBytes)) {
      batches.push(current);
      current = [];
      currentBytes = 0;
    }
    current.push(item);
    currentBytes += bytes;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}
