import { isToken } from './setting-checks.ts';
import { type CapacityResult, safeWorkerConcurrency } from './stores/postgres/capacity.ts';
import { dynamoDbCapacity, type WorkerStore } from './stores/worker-store.ts';
import type { WorkerSettings } from './worker-settings.ts';

/** The capacity formula's result, whether an input is a deploy-time token, and what raises the capacity. */
export interface ResolvedCapacity {
  /** Undefined when an input is a token or the inputs are refused. */
  readonly capacity: CapacityResult | undefined;
  readonly capacityTokens: boolean;
  /** The fix a message names when the safe concurrency is too low for a setting. */
  readonly capacityFix: string;
}

/**
 * The capacity formula → the safe worker concurrency (pattern document §10): on PostgreSQL the connections, the
 * write IOPS, the downstream rate and the lock contention; on DynamoDB, which holds no connection, the table's
 * write budget (`lib/stores/dynamodb/dynamodb-capacity.ts`).
 *
 * @internal
 */
export function resolveCapacity(
  props: Omit<WorkerSettings, 'vpc'>,
  values: {
    store: WorkerStore;
    dbPoolSize: number;
    dbMaxConnections: number;
    dbReservedConnections: number;
    recordConcurrency: number;
  },
  problems: string[],
): ResolvedCapacity {
  const { store, dbMaxConnections, dbReservedConnections } = values;
  if (store === 'dynamodb') {
    const dynamo = dynamoDbCapacity(props, values.recordConcurrency, problems);
    return {
      capacity: dynamo.capacity,
      capacityTokens: dynamo.tokens,
      capacityFix:
        'raise maxWriteUnitsPerSecond (the table serves more once scaled or with a raised quota), or lower transactItemsPerMessage or recordConcurrency',
    };
  }
  const capacityFix = 'raise the binding capacity input or lower dbPoolSize';
  const capacityInputs = {
    dbAvailableConnections: dbMaxConnections - dbReservedConnections,
    connectionsPerWorker: values.dbPoolSize,
    dbWriteIopsBudget: props.dbWriteIopsBudget,
    writeIopsPerMessage: props.writeIopsPerMessage,
    downstreamRateLimit: props.downstreamRateLimit,
    callsPerMessage: props.callsPerMessage,
    lockContentionSafeParallelism: props.lockContentionSafeParallelism,
  };
  const capacityTokens = [dbMaxConnections, dbReservedConnections, ...Object.values(capacityInputs)].some(
    (v) => isToken(v),
  );
  if (
    !isToken(dbReservedConnections) &&
    !isToken(dbMaxConnections) &&
    dbReservedConnections >= dbMaxConnections
  ) {
    problems.push(
      `dbReservedConnections (${dbReservedConnections}) must be below dbMaxConnections (${dbMaxConnections}); lower dbReservedConnections or raise dbMaxConnections`,
    );
    return { capacity: undefined, capacityTokens, capacityFix };
  }
  if (capacityTokens) return { capacity: undefined, capacityTokens, capacityFix };
  try {
    return { capacity: safeWorkerConcurrency(capacityInputs), capacityTokens, capacityFix };
  } catch (error) {
    problems.push(`${(error as Error).message}; fix the capacity props`);
    return { capacity: undefined, capacityTokens, capacityFix };
  }
}
