import {
  type DynamoDbCapacityInputs,
  type DynamoDbCapacityResult,
  safeDynamoDbConcurrency,
} from '../../../../lib/stores/dynamodb/dynamodb-capacity.ts';
import { capacityLines } from '../../capacity-lines.ts';
import { UsageError } from '../../errors.ts';
import type { CapacityInput } from '../../ops-store.ts';
import type { OpsOutput } from '../../output.ts';
import { emit } from '../../output.ts';
import { parseOptionalPositive } from '../../parse-options.ts';

/** Flags of the formula's inputs, for messages that name what the operator typed. */
const FLAGS: Record<string, string> = {
  maxWriteUnitsPerSecond: '--max-write-units-per-second',
  transactItemsPerMessage: '--transact-items-per-message',
  itemSizeKb: '--item-size-kb',
  recordLatencyMs: '--record-latency-ms',
  recordConcurrency: '--record-concurrency',
  downstream_rate_limit: '--downstream-rate-limit',
  calls_per_message: '--calls-per-message',
  lockContentionSafeParallelism: '--lock-contention-safe-parallelism',
};

/**
 * `capacity --store dynamodb`: the safe worker concurrency of a DynamoDB worker from its write budget (the same
 * `safeDynamoDbConcurrency` the CDK construct uses), with the write units one message costs and one worker
 * spends, naming the binding constraint. Needs no table or queue.
 *
 * @throws UsageError (exit 2) when an input is out of range or unpaired, naming its flag.
 */
export function dynamoDbCapacity(
  deps: { out: OpsOutput },
  inputs: DynamoDbCapacityInputs,
): DynamoDbCapacityResult {
  let result: DynamoDbCapacityResult;
  try {
    result = safeDynamoDbConcurrency(inputs);
  } catch (error) {
    const message = Object.entries(FLAGS).reduce(
      (text, [name, flag]) => text.replaceAll(name, flag),
      (error as Error).message,
    );
    throw new UsageError(`${message}.`, { cause: error });
  }
  emit(deps.out, result, () =>
    [
      `Write units per message: ${result.writeUnitsPerMessage} (1 gate put + 2 × each TransactWriteItems item, per started KB).`,
      `One worker: ${Number(result.messagesPerSecondPerWorker.toFixed(2))} messages/s, ${Number(result.writeUnitsPerSecondPerWorker.toFixed(2))} write units/s.`,
      ...capacityLines(result),
      result.safeConcurrency < 2
        ? 'Below the event source minimum of 2: the construct refuses this at synth. Raise --max-write-units-per-second, or lower --transact-items-per-message or --record-concurrency.'
        : `Set the event source mapping's MaximumConcurrency (and reserved concurrency ≥ it) to at most ${result.safeConcurrency}; the construct derives it from the same inputs (store "dynamodb").`,
    ].join('\n'),
  );
  return result;
}

/**
 * `capacity --store dynamodb` from its flags as given: `--max-write-units-per-second`, `--transact-items-per-message`,
 * `--item-size-kb`, `--record-latency-ms`, `--record-concurrency` (each with the formula's default when absent).
 *
 * @throws UsageError (exit 2) naming a flag whose value is not a positive number, or out of the formula's range.
 */
export function dynamoDbCapacityFromFlags(
  deps: { out: OpsOutput },
  input: CapacityInput,
): DynamoDbCapacityResult {
  const { flags, shared } = input;
  return dynamoDbCapacity(deps, {
    maxWriteUnitsPerSecond: parseOptionalPositive(
      flags.maxWriteUnitsPerSecond,
      '--max-write-units-per-second',
    ),
    transactItemsPerMessage: parseOptionalPositive(
      flags.transactItemsPerMessage,
      '--transact-items-per-message',
    ),
    itemSizeKb: parseOptionalPositive(flags.itemSizeKb, '--item-size-kb'),
    recordLatencyMs: parseOptionalPositive(flags.recordLatencyMs, '--record-latency-ms'),
    recordConcurrency: parseOptionalPositive(flags.recordConcurrency, '--record-concurrency'),
    ...shared,
  });
}
