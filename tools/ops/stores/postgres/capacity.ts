import type { CapacityInputs, CapacityResult } from '../../../../lib/stores/postgres/capacity.ts';
import { safeWorkerConcurrency } from '../../../../lib/stores/postgres/capacity.ts';
import { capacityLines } from '../../capacity-lines.ts';
import { UsageError } from '../../errors.ts';
import type { CapacityInput } from '../../ops-store.ts';
import type { OpsOutput } from '../../output.ts';
import { emit } from '../../output.ts';
import { optionText, parseCount, parseOptionalPositive } from '../../parse-options.ts';

/** Inputs of `sqs-worker capacity`, as the operator gives them. */
export interface CapacityCommandInputs extends Omit<CapacityInputs, 'dbAvailableConnections'> {
  /** max_connections of the database (or the proxy's connection budget). */
  readonly dbMaxConnections: number;
  /** Connections kept for everything else (admin, migrations, other services). @default 10, as the construct */
  readonly dbReservedConnections?: number;
}

/** Result of {@link capacity}. */
export interface CapacityCommandResult extends CapacityResult {
  readonly dbAvailableConnections: number;
}

/**
 * `capacity`: the pattern document's safe worker concurrency (the same `safeWorkerConcurrency` the CDK
 * construct uses), naming the binding constraint. Needs no database or queue.
 *
 * @throws UsageError (exit 2) when the inputs are inconsistent, naming them.
 */
export function capacity(deps: { out: OpsOutput }, inputs: CapacityCommandInputs): CapacityCommandResult {
  const reserved = inputs.dbReservedConnections ?? 10;
  const dbAvailableConnections = inputs.dbMaxConnections - reserved;
  if (dbAvailableConnections <= 0) {
    throw new UsageError(
      `--db-reserved-connections (${reserved}) must be below --db-max-connections (${inputs.dbMaxConnections}); ` +
        'the worker needs at least one connection.',
    );
  }
  let computed: CapacityResult;
  try {
    computed = safeWorkerConcurrency({
      dbAvailableConnections,
      connectionsPerWorker: inputs.connectionsPerWorker,
      dbWriteIopsBudget: inputs.dbWriteIopsBudget,
      writeIopsPerMessage: inputs.writeIopsPerMessage,
      downstreamRateLimit: inputs.downstreamRateLimit,
      callsPerMessage: inputs.callsPerMessage,
      lockContentionSafeParallelism: inputs.lockContentionSafeParallelism,
    });
  } catch (error) {
    throw new UsageError(
      `${(error as Error).message.replace(/_/g, '-')}. Flags: --db-write-iops-budget with --write-iops-per-message, ` +
        '--downstream-rate-limit with --calls-per-message.',
      { cause: error },
    );
  }
  const result: CapacityCommandResult = { ...computed, dbAvailableConnections };
  emit(deps.out, result, () =>
    [
      ...capacityLines(result),
      `Set the event source mapping's MaximumConcurrency (and reserved concurrency ≥ it) to at most ${result.safeConcurrency}.`,
    ].join('\n'),
  );
  return result;
}

/**
 * `capacity --store postgres` from its flags as given: `--db-max-connections` (required), `--db-reserved-connections`
 * (default 10), `--connections-per-worker`, `--db-write-iops-budget` with `--write-iops-per-message`.
 *
 * @throws UsageError (exit 2) naming a flag whose value is not a number in its range.
 */
export function capacityFromFlags(deps: { out: OpsOutput }, input: CapacityInput): CapacityCommandResult {
  const { flags, shared } = input;
  return capacity(deps, {
    dbMaxConnections: parseCount(optionText(flags.dbMaxConnections) ?? '', '--db-max-connections'),
    dbReservedConnections: parseCount(
      optionText(flags.dbReservedConnections) ?? '10',
      '--db-reserved-connections',
      0,
    ),
    connectionsPerWorker: parseOptionalPositive(flags.connectionsPerWorker, '--connections-per-worker'),
    dbWriteIopsBudget: parseOptionalPositive(flags.dbWriteIopsBudget, '--db-write-iops-budget'),
    writeIopsPerMessage: parseOptionalPositive(flags.writeIopsPerMessage, '--write-iops-per-message'),
    ...shared,
  });
}
