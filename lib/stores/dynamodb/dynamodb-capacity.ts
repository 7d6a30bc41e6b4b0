/**
 * The capacity formula for the DynamoDB store: write capacity instead of connections. A DynamoDB worker holds no
 * connection; what it can exhaust is the table's write throughput (throttled requests come back as retryable
 * failures, each one a receive on its way to the DLQ). One message writes:
 *
 * ```
 * write_units_per_message = ⌈item_size_kb⌉ × (1 + 2 × transact_items_per_message)
 *   1  the gate: one conditional PutItem of the inbox item (a failed condition consumes it too)
 *   2× each item of the TransactWriteItems (domain items + the inbox completion): transactional writes cost double
 * messages_per_second_per_worker = record_concurrency × 1000 / record_latency_ms
 * safe_worker_concurrency ≤ min(
 *   max_write_units_per_second / (write_units_per_message × messages_per_second_per_worker),
 *   downstream_rate_limit / calls_per_message,
 *   lock_contention_safe_parallelism)
 * ```
 *
 * The write budget is what the table may take from this worker: a new on-demand table serves 4,000 write units
 * per second before it has scaled, an account's tables 40,000 each by default (a service quota), one partition
 * 1,000. A latency estimate on the low side is the safe side (a faster worker writes more per second).
 * Pure: no CDK, no I/O.
 */
import { boundConcurrency, type CapacityResult, type CapacityTerm } from '../postgres/capacity.ts';

/** Defaults of {@link DynamoDbCapacityInputs}, shared by the construct and `sqs-worker capacity --store dynamodb`. */
export const DYNAMODB_CAPACITY_DEFAULTS = {
  /** What a new on-demand table serves before it has scaled (AWS: up to 4,000 writes per second). */
  maxWriteUnitsPerSecond: 4000,
  /** One domain item and the inbox completion. */
  transactItemsPerMessage: 2,
  /** Items up to 1 KB: one write unit per write. */
  itemSizeKb: 1,
  /** A gate put and a transaction in the same region take ~5–15 ms; lower is the safe side. */
  recordLatencyMs: 15,
  recordConcurrency: 1,
} as const;

/** Items one TransactWriteItems call may hold (the DynamoDB limit). */
export const MAX_TRANSACT_ITEMS = 100;
/** The largest DynamoDB item, in KB. */
export const MAX_ITEM_SIZE_KB = 400;

/** Inputs of {@link safeDynamoDbConcurrency}; all positive numbers. */
export interface DynamoDbCapacityInputs {
  /** Write units per second the worker may spend on the table (the write budget). @default 4000 */
  readonly maxWriteUnitsPerSecond?: number;
  /**
   * Items in the message's TransactWriteItems: the domain items plus the inbox completion, 1 to 100.
   * @default 2
   */
  readonly transactItemsPerMessage?: number;
  /** Size of the largest item written, in KB (writes are billed per started KB), up to 400. @default 1 */
  readonly itemSizeKb?: number;
  /** Expected time one record takes, gate to commit, in milliseconds. @default 15 */
  readonly recordLatencyMs?: number;
  /** Records one invocation processes at once (`recordConcurrency`). @default 1 */
  readonly recordConcurrency?: number;
  /** Calls per second a downstream provider allows (with `callsPerMessage`). */
  readonly downstreamRateLimit?: number;
  /** Downstream calls per second of one worker (with `downstreamRateLimit`). */
  readonly callsPerMessage?: number;
  /** Parallelism above which transaction conflicts on hot items hurt. */
  readonly lockContentionSafeParallelism?: number;
}

/** Result of {@link safeDynamoDbConcurrency}: the capacity result plus the per-message and per-worker figures. */
export interface DynamoDbCapacityResult extends CapacityResult {
  /** Write units one message costs. */
  readonly writeUnitsPerMessage: number;
  /** Messages per second one concurrent worker processes. */
  readonly messagesPerSecondPerWorker: number;
  /** Write units per second one concurrent worker spends. */
  readonly writeUnitsPerSecondPerWorker: number;
  /** The write budget used. */
  readonly maxWriteUnitsPerSecond: number;
}

/**
 * Computes the safe worker concurrency of a DynamoDB worker from its write budget and names the binding term.
 *
 * @throws RangeError when an input is not a positive finite number (or out of its DynamoDB limit), naming it
 * and its value, or when one of a pair is given without the other.
 * @example
 * ```ts
 * safeDynamoDbConcurrency({ maxWriteUnitsPerSecond: 4000, transactItemsPerMessage: 2, recordLatencyMs: 20 });
 * // 5 write units per message × 50 messages/s per worker = 250 WCU/s per worker → { safeConcurrency: 16, binding: 'write_units', … }
 * ```
 */
export function safeDynamoDbConcurrency(inputs: DynamoDbCapacityInputs): DynamoDbCapacityResult {
  for (const [name, value] of Object.entries(inputs)) {
    if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value) || value <= 0)) {
      throw new RangeError(`Capacity input ${name} must be a positive number (given ${String(value)})`);
    }
  }
  const budget = inputs.maxWriteUnitsPerSecond ?? DYNAMODB_CAPACITY_DEFAULTS.maxWriteUnitsPerSecond;
  const transactItems = inputs.transactItemsPerMessage ?? DYNAMODB_CAPACITY_DEFAULTS.transactItemsPerMessage;
  const itemSizeKb = inputs.itemSizeKb ?? DYNAMODB_CAPACITY_DEFAULTS.itemSizeKb;
  const latencyMs = inputs.recordLatencyMs ?? DYNAMODB_CAPACITY_DEFAULTS.recordLatencyMs;
  const recordConcurrency = inputs.recordConcurrency ?? DYNAMODB_CAPACITY_DEFAULTS.recordConcurrency;
  if (!Number.isInteger(transactItems) || transactItems > MAX_TRANSACT_ITEMS) {
    throw new RangeError(
      `Capacity input transactItemsPerMessage must be a whole number from 1 to ${MAX_TRANSACT_ITEMS}, the TransactWriteItems limit (given ${transactItems})`,
    );
  }
  if (itemSizeKb > MAX_ITEM_SIZE_KB) {
    throw new RangeError(
      `Capacity input itemSizeKb must be at most ${MAX_ITEM_SIZE_KB}, the DynamoDB item size limit (given ${itemSizeKb})`,
    );
  }
  if (!Number.isInteger(recordConcurrency)) {
    throw new RangeError(
      `Capacity input recordConcurrency must be a whole number (given ${recordConcurrency})`,
    );
  }

  const unitsPerWrite = Math.ceil(itemSizeKb);
  const writeUnitsPerMessage = unitsPerWrite * (1 + 2 * transactItems);
  const messagesPerSecondPerWorker = (recordConcurrency * 1000) / latencyMs;
  const writeUnitsPerSecondPerWorker = writeUnitsPerMessage * messagesPerSecondPerWorker;
  const round = (value: number) => Number(value.toFixed(2));
  const terms: Array<{ term: CapacityTerm; value: number; formula: string }> = [
    {
      term: 'write_units',
      // budget × latency / (units × records × 1000), not budget / (per-worker rate): no float error at whole results.
      value: (budget * latencyMs) / (writeUnitsPerMessage * recordConcurrency * 1000),
      formula: `max_write_units_per_second ${budget} / (write_units_per_message ${writeUnitsPerMessage} × messages_per_second_per_worker ${round(messagesPerSecondPerWorker)})`,
    },
  ];
  return {
    ...boundConcurrency(terms, inputs),
    writeUnitsPerMessage,
    messagesPerSecondPerWorker,
    writeUnitsPerSecondPerWorker,
    maxWriteUnitsPerSecond: budget,
  };
}
