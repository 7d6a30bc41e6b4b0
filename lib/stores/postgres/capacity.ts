/**
 * The pattern document's capacity formula (§10), shared by the CDK construct and `sqs-worker capacity`:
 *
 * ```
 * safe_worker_concurrency ≤ min(
 *   db_available_connections / connection_per_worker,
 *   db_write_iops_budget / write_iops_per_message,
 *   downstream_rate_limit / calls_per_message,
 *   lock_contention_safe_parallelism)
 * ```
 * A term whose inputs are not given is left out. Pure: no CDK, no I/O.
 */

/** Inputs of {@link safeWorkerConcurrency}; all counts are positive numbers. */
export interface CapacityInputs {
  /** Connections the worker may use on the database (or proxy), after other clients' share. */
  readonly dbAvailableConnections: number;
  /** Connections one concurrent worker holds (its pool size). @default 1 */
  readonly connectionsPerWorker?: number;
  /** Write IOPS the worker may spend. */
  readonly dbWriteIopsBudget?: number;
  /** Write IOPS one message costs, per second of one worker's throughput. */
  readonly writeIopsPerMessage?: number;
  /** Calls per second a downstream provider allows. */
  readonly downstreamRateLimit?: number;
  /** Downstream calls one message makes, per second of one worker's throughput. */
  readonly callsPerMessage?: number;
  /** Parallelism above which lock contention on hot aggregates hurts. */
  readonly lockContentionSafeParallelism?: number;
}

/** Name of a term of the formula. */
export type CapacityTerm =
  | 'db_connections'
  | 'write_iops'
  | 'downstream_rate'
  | 'lock_contention'
  /** The DynamoDB store's write budget (`safeDynamoDbConcurrency`). */
  | 'write_units';

/** Result of {@link safeWorkerConcurrency}. */
export interface CapacityResult {
  /** The safe concurrency: the smallest term, rounded down, at least 0. */
  readonly safeConcurrency: number;
  /** The term that set the result. */
  readonly binding: CapacityTerm;
  /** Every term that could be computed, with its value (not rounded). */
  readonly terms: ReadonlyArray<{
    readonly term: CapacityTerm;
    readonly value: number;
    readonly formula: string;
  }>;
  /** One sentence naming the binding term, for annotations and the CLI. */
  readonly explanation: string;
}

/**
 * Computes the safe worker concurrency and names the binding constraint.
 *
 * @throws RangeError when an input is not a positive finite number, naming it and its value.
 * @example
 * ```ts
 * safeWorkerConcurrency({ dbAvailableConnections: 80, connectionsPerWorker: 1, lockContentionSafeParallelism: 20 });
 * // → { safeConcurrency: 20, binding: 'lock_contention', ... }
 * ```
 */
export function safeWorkerConcurrency(inputs: CapacityInputs): CapacityResult {
  for (const [name, value] of Object.entries(inputs)) {
    if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value) || value <= 0)) {
      throw new RangeError(`Capacity input ${name} must be a positive number (given ${String(value)})`);
    }
  }
  const perWorker = inputs.connectionsPerWorker ?? 1;
  const terms: Term[] = [
    {
      term: 'db_connections',
      value: inputs.dbAvailableConnections / perWorker,
      formula: `db_available_connections ${inputs.dbAvailableConnections} / connection_per_worker ${perWorker}`,
    },
  ];
  pushRatio(
    terms,
    'write_iops',
    'db_write_iops_budget',
    inputs.dbWriteIopsBudget,
    'write_iops_per_message',
    inputs.writeIopsPerMessage,
  );
  return boundConcurrency(terms, inputs);
}

/** One term of a capacity derivation: the concurrency it allows, and how. */
type Term = { term: CapacityTerm; value: number; formula: string };

/** Adds the term `x / y` when both inputs are given; one without the other is a RangeError naming both. */
function pushRatio(
  terms: Term[],
  term: CapacityTerm,
  a: string,
  x: number | undefined,
  b: string,
  y: number | undefined,
) {
  if (x === undefined && y === undefined) return;
  if (x === undefined || y === undefined) {
    throw new RangeError(
      `Capacity inputs ${a} and ${b} go together (given ${a}=${String(x)}, ${b}=${String(y)})`,
    );
  }
  terms.push({ term, value: x / y, formula: `${a} ${x} / ${b} ${y}` });
}

/**
 * The safe concurrency of a store's own terms and the ones every store shares (downstream rate, lock contention):
 * the smallest term, rounded down, and the term that binds.
 *
 * @internal
 */
export function boundConcurrency(
  storeTerms: readonly Term[],
  inputs: Pick<CapacityInputs, 'downstreamRateLimit' | 'callsPerMessage' | 'lockContentionSafeParallelism'>,
): CapacityResult {
  const terms = [...storeTerms];
  pushRatio(
    terms,
    'downstream_rate',
    'downstream_rate_limit',
    inputs.downstreamRateLimit,
    'calls_per_message',
    inputs.callsPerMessage,
  );
  if (inputs.lockContentionSafeParallelism !== undefined) {
    terms.push({
      term: 'lock_contention',
      value: inputs.lockContentionSafeParallelism,
      formula: `lock_contention_safe_parallelism ${inputs.lockContentionSafeParallelism}`,
    });
  }
  const smallest = terms.reduce((min, term) => (term.value < min.value ? term : min));
  const safeConcurrency = Math.max(0, Math.floor(smallest.value));
  return {
    safeConcurrency,
    binding: smallest.term,
    terms,
    explanation: `safe worker concurrency ${safeConcurrency}, bound by ${smallest.term} (${smallest.formula})`,
  };
}
