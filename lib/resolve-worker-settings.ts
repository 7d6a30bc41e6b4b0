import { Duration } from 'aws-cdk-lib';
import { DYNAMODB_MAX_RECORD_CONCURRENCY } from '../lambda/config.ts';
import { checkEntryFiles } from './check-entry-files.ts';
import { checkWorkerEnvironment } from './check-worker-environment.ts';
import { resolveBreakerSettings } from './jobs/resolve-breaker-settings.ts';
import { resolveJobSettings } from './jobs/resolve-job-settings.ts';
import { checkAlarmSettings } from './observability/check-alarm-settings.ts';
import { DEFAULT_MEMORY_MB, type PayloadMemory, resolvePayloadLimit } from './resolve-payload-limit.ts';
import type { WorkerRuntime } from './runtimes/fargate/fargate-settings.ts';
import {
  checkRuntime,
  FARGATE_DEFAULT_POOL_SIZE,
  type PollerSettings,
  resolvePollerSettings,
  XRAY_DAEMON_MEMORY_MIB,
} from './runtimes/fargate/resolve-poller-settings.ts';
import {
  ESM_MAX_CONCURRENCY,
  ESM_MIN_CONCURRENCY,
  fmtSeconds,
  isToken,
  MAX_RESERVED_CONCURRENCY,
  settingChecks,
} from './setting-checks.ts';
import { type CapacityResult, safeWorkerConcurrency } from './stores/postgres/capacity.ts';
import { type DatabaseUsers, resolveDatabaseUsers } from './stores/postgres/resolve-database-users.ts';
import { resolveRoleTimeouts } from './stores/postgres/resolve-role-timeouts.ts';
import {
  checkStoreSettings,
  dynamoDbCapacity,
  type WorkerStore,
  withStoreDefaults,
} from './stores/worker-store.ts';
import type { WorkerSettings } from './worker-settings.ts';

/** Props of {@link SqsDatabaseWorker} with every default applied, the capacity result and the derived values. */
export interface ResolvedWorkerSettings {
  /** Where the inbox and the domain state live. */
  readonly store: WorkerStore;
  /** Where the worker runs: a function behind an event source mapping, or the poller on Fargate. */
  readonly runtime: WorkerRuntime;
  /** The Fargate runtime's settings (`runtime: 'fargate'` only). */
  readonly poller: PollerSettings | undefined;
  readonly fifo: boolean;
  readonly timeout: Duration;
  readonly visibilityTimeout: Duration;
  readonly retentionPeriod: Duration;
  readonly dlqRetentionPeriod: Duration;
  readonly maxReceiveCount: number;
  readonly maxMessageSizeBytes: number;
  /** Lifetime of payload bucket objects and of their noncurrent versions (whole days). */
  readonly payloadVersionRetention: Duration;
  readonly maxPayloadBytes: number;
  readonly memorySize: number;
  readonly batchSize: number;
  readonly maxBatchingWindow: Duration;
  /** How the event source mapping scales: `MaximumConcurrency`, or provisioned pollers. */
  readonly scalingMode: ScalingMode;
  /**
   * The event source `MaximumConcurrency` (mode `maximum-concurrency`). In mode `provisioned` the mapping has
   * none (the two are mutually exclusive): the value is the reserved concurrency, the hard cap there. With
   * `runtime: 'fargate'`, the maximum task count (each task is one worker of the capacity formula).
   */
  readonly maxConcurrency: number;
  /** `ProvisionedPollerConfig` of the event source (mode `provisioned` only). */
  readonly provisionedPollers: ProvisionedPollers | undefined;
  /** Reserved concurrency of the worker; undefined when `reserveConcurrency` is false. */
  readonly reservedConcurrency: number | undefined;
  /** Whether the worker and the relay reserve concurrency. */
  readonly reserveConcurrency: boolean;
  readonly dbPoolSize: number;
  readonly recordConcurrency: number;
  readonly dbMaxConnections: number;
  readonly proxyMaxConnectionsPercent: number;
  /** `statement_timeout` of the worker's and the relay's roles, in milliseconds (a token when unresolved). */
  readonly dbStatementTimeoutMs: number;
  /** `lock_timeout` of the same roles, in milliseconds (a token when unresolved). */
  readonly dbLockTimeoutMs: number;
  /** The capacity formula's result; `undefined` when an input is an unresolved token. */
  readonly capacity: CapacityResult | undefined;
  /** The database user of each function: one per function, so each gets only its own privileges. */
  readonly dbUsers: DatabaseUsers;
  /** The retention job's windows after defaults (undefined when `retention` is false). */
  readonly retention: RetentionWindows | undefined;
  /** The breaker's settings; `undefined` when `breaker` is false. */
  readonly breaker: BreakerSettingsResolved | undefined;
}

/** Windows of the retention job after defaults. */
export interface RetentionWindows {
  readonly schedule: Duration;
  readonly maxRun: Duration;
  readonly inbox: Duration;
  readonly outbox: Duration;
  readonly effectLog: Duration;
  readonly quarantine: Duration;
}

/** The breaker's settings after defaults. */
export interface BreakerSettingsResolved {
  readonly checkInterval: Duration;
  readonly failureThreshold: number;
  readonly minOpen: Duration;
  readonly halfOpen: Duration;
  readonly halfOpenConcurrency: number;
}

/**
 * How the SQS event source mapping scales: `maximum-concurrency` (Lambda's default pollers, capped by the
 * mapping's `MaximumConcurrency`) or `provisioned` (`ProvisionedPollerConfig`: a minimum of pollers always on,
 * billed whether messages arrive or not, scaling to a maximum).
 */
export type ScalingMode = 'maximum-concurrency' | 'provisioned';

/** Minimum and maximum pollers of a provisioned event source mapping. */
export interface ProvisionedPollers {
  readonly minimumPollers: number;
  readonly maximumPollers: number;
}

/**
 * Concurrent invocations one provisioned SQS poller drives at most (AWS: "each poller can handle up to 10
 * concurrent invokes"): the capacity formula's safe concurrency divided by this gives the maximum pollers.
 */
export const INVOKES_PER_POLLER = 10;
/** The SQS event source limits of `ProvisionedPollerConfig`. */
const MIN_POLLERS = 2;
const MAX_MINIMUM_POLLERS = 200;
const MAX_MAXIMUM_POLLERS = 2000;

export type { DatabaseUsers } from './stores/postgres/resolve-database-users.ts';

/** Thrown by {@link resolveWorkerSettings} with every problem found; `problems` holds one message per rule. */
export class WorkerSettingsError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`SqsDatabaseWorker has ${problems.length} unsafe setting(s):\n- ${problems.join('\n- ')}`);
    this.name = 'WorkerSettingsError';
  }
}

/**
 * Connections the relay and the migration function take through the proxy besides the worker.
 *
 * @internal
 */
export const AUXILIARY_PROXY_CONNECTIONS = 2;
/** The breaker's probe holds one more (pool of 1, checking every few seconds keeps it open). */
const BREAKER_PROXY_CONNECTIONS = 1;
/**
 * Client connections through the proxy besides the worker's: the relay and the migration function, plus the
 * breaker's probe when the breaker is deployed.
 *
 * @internal
 */
export function auxiliaryProxyConnections(props: Pick<WorkerSettings, 'breaker' | 'runtime'>): number {
  // The Fargate runtime has no event source mapping, hence no breaker (the poller pauses itself).
  const breaker = props.breaker !== false && props.runtime !== 'fargate';
  return AUXILIARY_PROXY_CONNECTIONS + (breaker ? BREAKER_PROXY_CONNECTIONS : 0);
}

/**
 * Applies the defaults of {@link WorkerSettings}, runs the capacity formula and checks every rule.
 * All problems are collected; each names the offending value and the fix. Values that are unresolved tokens
 * are not checked (their value is only known at deploy time).
 *
 * Rules: ranges of each number; durations in whole seconds; visibility timeout ≥ 6 × function timeout +
 * batching window; maxConcurrency in 2..1000, ≤ reserved concurrency (a whole number, 2..100000) and ≤ the safe
 * worker concurrency; maxReceiveCount 5..1000; DLQ retention >
 * source retention; batch size ≤ 10 for FIFO; batching window ≥ 1 s when batch size > 10; record concurrency
 * ≤ pool size (1..10 with DynamoDB, as the worker's cold start allows); the payload limit within what the memory
 * holds for the records in flight (derived when not given: `resolve-payload-limit.ts`); database users are
 * lowercase SQL identifiers, one per function; `workerEnvironment` sets no variable the construct sets from a prop
 * (`check-worker-environment.ts`). The combinations of store, runtime, commit mode, tracing and scaling mode that
 * cannot start are refused here (test/infra/combinations.test.ts, docs/deploy.md#supported-combinations).
 *
 * @throws WorkerSettingsError listing every problem.
 * @example
 * ```ts
 * const settings = resolveWorkerSettings({ vpc, dbMaxConnections: 400 });
 * settings.maxConcurrency; // 390 (bound by db_connections)
 * ```
 *
 * @internal
 */
export function resolveWorkerSettings(
  given: Omit<WorkerSettings, 'vpc'> & { readonly vpc?: unknown },
  options: { readonly checkVpc?: boolean } = {},
): ResolvedWorkerSettings {
  const problems: string[] = [];
  // The store first: its defaults (no relay, jobs or breaker with DynamoDB) apply to every rule below.
  const store = checkStoreSettings(given, problems, { checkVpc: options.checkVpc ?? false });
  const props = withStoreDefaults(given);
  checkWorkerEnvironment(props, problems);
  checkEntryFiles(props, store, problems);
  const checks = settingChecks(problems);
  const { range, seconds, durationRange } = checks;

  const runtime = checkRuntime(props, problems);
  const fargate = runtime === 'fargate';
  const fifo = props.fifo ?? false;
  const timeout = props.timeout ?? Duration.seconds(30);
  const maxBatchingWindow = props.maxBatchingWindow ?? Duration.seconds(0);
  const batchSize = props.batchSize ?? 10;
  const retentionPeriod = props.retentionPeriod ?? Duration.days(4);
  const dlqRetentionPeriod = props.dlqRetentionPeriod ?? Duration.days(14);
  const maxReceiveCount = props.maxReceiveCount ?? 10;
  const maxMessageSizeBytes = props.maxMessageSizeBytes ?? 1_048_576;
  const memorySize = props.memorySize ?? DEFAULT_MEMORY_MB;
  const dbPoolSize = props.dbPoolSize ?? (fargate ? FARGATE_DEFAULT_POOL_SIZE : 1);
  // Per batch, a batch's records run one after another in its one transaction, on one connection
  // (WORKER_RECORD_CONCURRENCY 1): a function runs one record at a time, a Fargate task up to dbPoolSize whole
  // batches at once (recordConcurrency is then its POLLER_CONCURRENCY, the records in flight).
  const perBatch = store === 'postgres' && props.commitMode === 'per-batch';
  const recordLimit = perBatch ? (fargate ? dbPoolSize * batchSize : 1) : dbPoolSize;
  const recordConcurrency = props.recordConcurrency ?? (perBatch ? recordLimit : dbPoolSize);
  const dbMaxConnections = props.dbMaxConnections ?? 80;
  const dbReservedConnections = props.dbReservedConnections ?? 10;

  const timeoutS = seconds('timeout', timeout);
  const windowS = seconds('maxBatchingWindow', maxBatchingWindow);
  const retentionS = seconds('retentionPeriod', retentionPeriod);
  const dlqRetentionS = seconds('dlqRetentionPeriod', dlqRetentionPeriod);
  durationRange('timeout', timeoutS, 1, 900);
  durationRange('maxBatchingWindow', windowS, 0, 300);
  durationRange('retentionPeriod', retentionS, 60, 1_209_600);
  durationRange('dlqRetentionPeriod', dlqRetentionS, 60, 1_209_600);
  range('batchSize', batchSize, 1, 10_000);
  range('maxMessageSizeBytes', maxMessageSizeBytes, 1024, 1_048_576, ' bytes');
  range('memorySize', memorySize, 128, 10_240, ' MB');
  range('dbPoolSize', dbPoolSize, 1, 100);
  range('dbMaxConnections', dbMaxConnections, 10, 5000);
  range('proxyMaxConnectionsPercent', props.proxyMaxConnectionsPercent, 1, 100);

  // Visibility timeout ≥ 6 × function timeout + batching window (AWS's advice for SQS event sources): a record
  // must not reappear while the invocation that holds it can still be running or retried by Lambda.
  // (With runtime "fargate" the lease sets it: resolvePollerSettings.)
  const requiredVisibility =
    !fargate && timeoutS !== undefined && windowS !== undefined ? 6 * timeoutS + windowS : undefined;
  let visibilityTimeout =
    props.visibilityTimeout ?? (fargate ? (props.pollerVisibility ?? Duration.seconds(60)) : undefined);
  if (visibilityTimeout === undefined) {
    if (timeout.isUnresolved() || maxBatchingWindow.isUnresolved()) {
      problems.push(
        'timeout or maxBatchingWindow is a deploy-time token, so visibilityTimeout has no default; set visibilityTimeout',
      );
    }
    visibilityTimeout = Duration.seconds(requiredVisibility ?? 900 * 6);
  } else {
    const visibilityS = seconds('visibilityTimeout', visibilityTimeout);
    if (visibilityS !== undefined && requiredVisibility !== undefined && visibilityS < requiredVisibility) {
      problems.push(
        `visibilityTimeout (${fmtSeconds(visibilityS)}) must be at least 6 × function timeout (${fmtSeconds(timeoutS as number)}) + maxBatchingWindow (${fmtSeconds(windowS as number)}) = ${fmtSeconds(requiredVisibility)}; raise visibilityTimeout or lower the function timeout`,
      );
    }
    durationRange('visibilityTimeout', visibilityS, 0, 43_200);
  }

  // One message per value: a whole number below 5 (0 included) gets the reason, anything else the range.
  if (!isToken(maxReceiveCount) && Number.isInteger(maxReceiveCount) && maxReceiveCount < 5) {
    problems.push(
      `maxReceiveCount (${maxReceiveCount}) must be at least 5 so a transient failure or a backoff does not send a message to the DLQ; raise maxReceiveCount`,
    );
  } else {
    range('maxReceiveCount', maxReceiveCount, 5, 1000);
  }

  if (retentionS !== undefined && dlqRetentionS !== undefined && dlqRetentionS <= retentionS) {
    problems.push(
      `dlqRetentionPeriod (${fmtSeconds(dlqRetentionS)}) must be longer than retentionPeriod (${fmtSeconds(retentionS)}): a message keeps its original enqueue time in the DLQ and would expire there early; raise dlqRetentionPeriod or lower retentionPeriod`,
    );
  }

  // A message (and its DLQ copy) must never outlive the payload object version it refers to.
  const DAY = 86_400;
  const minPayloadDays =
    retentionS !== undefined && dlqRetentionS !== undefined
      ? Math.ceil((retentionS + dlqRetentionS) / DAY)
      : undefined;
  let payloadVersionRetention = props.payloadVersionRetention ?? Duration.days(minPayloadDays ?? 28);
  if (props.payloadVersionRetention !== undefined) {
    const payloadS = seconds('payloadVersionRetention', props.payloadVersionRetention);
    if (payloadS !== undefined && payloadS % DAY !== 0) {
      problems.push(
        `payloadVersionRetention (${fmtSeconds(payloadS)}) must be whole days (S3 lifecycle counts days); round it up`,
      );
    } else if (payloadS !== undefined && minPayloadDays !== undefined && payloadS / DAY < minPayloadDays) {
      problems.push(
        `payloadVersionRetention (${payloadS / DAY} days) must be at least retentionPeriod + dlqRetentionPeriod (${fmtSeconds(retentionS as number)} + ${fmtSeconds(dlqRetentionS as number)}, ${minPayloadDays} days rounded up): a message or its DLQ copy would outlive the payload version it refers to and fail PAYLOAD_NOT_FOUND; raise payloadVersionRetention to ${minPayloadDays} days or more`,
      );
      payloadVersionRetention = Duration.days(minPayloadDays);
    }
  }
  range('maxPayloadBytes', props.maxPayloadBytes, 1, 1024 * 1024 * 1024, ' bytes');

  if (fifo && !isToken(batchSize) && batchSize > 10) {
    problems.push(
      `batchSize (${batchSize}) must be at most 10 for a FIFO queue; lower batchSize to 10 or less`,
    );
  }
  if (fifo && windowS !== undefined && windowS > 0) {
    problems.push(
      `maxBatchingWindow (${fmtSeconds(windowS)}) must be 0 s for a FIFO queue (Lambda does not batch FIFO records over time); remove maxBatchingWindow`,
    );
  }
  if (!fargate && !fifo && !isToken(batchSize) && batchSize > 10 && windowS !== undefined && windowS < 1) {
    problems.push(
      `maxBatchingWindow (${fmtSeconds(windowS)}) must be at least 1 s when batchSize (${batchSize}) is above 10; set maxBatchingWindow or lower batchSize to 10`,
    );
  }

  const retention = resolveJobSettings(props, retentionS, dlqRetentionS, problems, checks);
  checkAlarmSettings(props, problems, checks);

  if (
    store === 'postgres' &&
    !isToken(recordConcurrency) &&
    !isToken(dbPoolSize) &&
    !isToken(batchSize) &&
    recordConcurrency > recordLimit
  ) {
    problems.push(
      !perBatch
        ? `recordConcurrency (${recordConcurrency}) must not exceed dbPoolSize (${dbPoolSize}): each record in flight holds one connection; raise dbPoolSize or lower recordConcurrency`
        : fargate
          ? `recordConcurrency (${recordConcurrency}) must not exceed dbPoolSize × batchSize (${dbPoolSize} × ${batchSize} = ${recordLimit}) with commitMode per-batch: each batch in flight holds one connection; raise dbPoolSize or lower recordConcurrency`
          : `recordConcurrency (${recordConcurrency}) must be 1 with commitMode per-batch: an invocation's batch runs one record after another in its one transaction; remove recordConcurrency`,
    );
  }
  if (
    store === 'dynamodb' &&
    !isToken(recordConcurrency) &&
    Number.isInteger(recordConcurrency) &&
    recordConcurrency > DYNAMODB_MAX_RECORD_CONCURRENCY
  ) {
    // The worker's cold start refuses it (lambda/config.ts), whatever the write budget allows.
    problems.push(
      `recordConcurrency (${recordConcurrency}) must be a whole number from 1 to ${DYNAMODB_MAX_RECORD_CONCURRENCY} with store "dynamodb" (WORKER_RECORD_CONCURRENCY: the worker runs at most ${DYNAMODB_MAX_RECORD_CONCURRENCY} records of a batch at once); lower recordConcurrency to ${DYNAMODB_MAX_RECORD_CONCURRENCY} or less`,
    );
  } else {
    range('recordConcurrency', recordConcurrency, 1, perBatch && fargate ? 1000 : 100);
  }

  // Capacity formula → safe concurrency (pattern document §10).
  let capacity: CapacityResult | undefined;
  const capacityInputs = {
    dbAvailableConnections: dbMaxConnections - dbReservedConnections,
    connectionsPerWorker: dbPoolSize,
    dbWriteIopsBudget: props.dbWriteIopsBudget,
    writeIopsPerMessage: props.writeIopsPerMessage,
    downstreamRateLimit: props.downstreamRateLimit,
    callsPerMessage: props.callsPerMessage,
    lockContentionSafeParallelism: props.lockContentionSafeParallelism,
  };
  // The DynamoDB store holds no connection: its formula is the table's write budget (lib/stores/dynamodb/dynamodb-capacity.ts).
  const dynamo = store === 'dynamodb' ? dynamoDbCapacity(props, recordConcurrency, problems) : undefined;
  const capacityTokens = dynamo
    ? dynamo.tokens
    : [dbMaxConnections, dbReservedConnections, ...Object.values(capacityInputs)].some((v) => isToken(v));
  const capacityFix =
    store === 'dynamodb'
      ? 'raise maxWriteUnitsPerSecond (the table serves more once scaled or with a raised quota), or lower transactItemsPerMessage or recordConcurrency'
      : 'raise the binding capacity input or lower dbPoolSize';
  if (dynamo) {
    capacity = dynamo.capacity;
  } else if (
    !isToken(dbReservedConnections) &&
    !isToken(dbMaxConnections) &&
    dbReservedConnections >= dbMaxConnections
  ) {
    problems.push(
      `dbReservedConnections (${dbReservedConnections}) must be below dbMaxConnections (${dbMaxConnections}); lower dbReservedConnections or raise dbMaxConnections`,
    );
  } else if (!capacityTokens) {
    try {
      capacity = safeWorkerConcurrency(capacityInputs);
    } catch (error) {
      problems.push(`${(error as Error).message}; fix the capacity props`);
    }
  }

  const scalingMode: ScalingMode = props.scalingMode ?? 'maximum-concurrency';
  let maxConcurrency = props.maxConcurrency;
  let reservedConcurrency: number;
  let provisionedPollers: ProvisionedPollers | undefined;
  if (scalingMode !== 'maximum-concurrency' && scalingMode !== 'provisioned') {
    problems.push(
      `scalingMode ("${String(scalingMode)}") must be "maximum-concurrency" or "provisioned"; set one of them`,
    );
  }
  let poller: PollerSettings | undefined;
  if (fargate) {
    poller = resolvePollerSettings(props, visibilityTimeout, capacity, capacityTokens, problems);
    maxConcurrency = poller.maxTasks;
    reservedConcurrency = poller.maxTasks;
  } else if (scalingMode === 'provisioned') {
    ({ provisionedPollers, reservedConcurrency } = resolveProvisioned(
      props,
      capacity,
      capacityTokens,
      problems,
      // What raises a DynamoDB worker's capacity is named: its formula has no connections.
      store === 'dynamodb' ? capacityFix : 'raise the binding capacity input',
    ));
    maxConcurrency = reservedConcurrency;
  } else {
    for (const name of ['minimumPollers', 'maximumPollers'] as const) {
      if (props[name] !== undefined) {
        problems.push(
          `${name} (${props[name]}) applies only to scalingMode "provisioned" (given scalingMode "${scalingMode}"); remove ${name} or set scalingMode "provisioned"`,
        );
      }
    }
    if (maxConcurrency === undefined) {
      if (capacity) {
        maxConcurrency = Math.min(capacity.safeConcurrency, ESM_MAX_CONCURRENCY);
        if (maxConcurrency < ESM_MIN_CONCURRENCY) {
          problems.push(
            `the safe worker concurrency is ${capacity.safeConcurrency} (${capacity.explanation}), below the event source minimum of ${ESM_MIN_CONCURRENCY}; ${capacityFix}`,
          );
        }
      } else {
        if (capacityTokens) {
          problems.push(
            'a capacity input is a deploy-time token, so maxConcurrency has no default; set maxConcurrency',
          );
        }
        maxConcurrency = ESM_MIN_CONCURRENCY;
      }
    } else if (!isToken(maxConcurrency)) {
      if (
        !Number.isInteger(maxConcurrency) ||
        maxConcurrency < ESM_MIN_CONCURRENCY ||
        maxConcurrency > ESM_MAX_CONCURRENCY
      ) {
        problems.push(
          `maxConcurrency (${maxConcurrency}) must be a whole number from ${ESM_MIN_CONCURRENCY} to ${ESM_MAX_CONCURRENCY} (the SQS event source limits); set a value in that range`,
        );
      }
      if (capacity && maxConcurrency > capacity.safeConcurrency) {
        problems.push(
          `maxConcurrency (${maxConcurrency}) exceeds the safe worker concurrency: ${capacity.explanation}; lower maxConcurrency or raise the binding capacity input`,
        );
      }
    }

    reservedConcurrency = props.reservedConcurrency ?? maxConcurrency;
    const reservedInRange = range(
      'reservedConcurrency',
      props.reservedConcurrency,
      ESM_MIN_CONCURRENCY,
      MAX_RESERVED_CONCURRENCY,
    );
    if (
      reservedInRange &&
      !isToken(reservedConcurrency) &&
      !isToken(maxConcurrency) &&
      reservedConcurrency < maxConcurrency
    ) {
      problems.push(
        `maxConcurrency (${maxConcurrency}) must not exceed reservedConcurrency (${reservedConcurrency}), or Lambda throttles the poller; raise reservedConcurrency to at least ${maxConcurrency} or lower maxConcurrency`,
      );
    }
  }
  const concurrency = maxConcurrency;
  const maxPayloadBytes = resolvePayloadLimit(
    props.maxPayloadBytes,
    payloadMemory(props, { fargate, poller, memorySize, batchSize, recordConcurrency }),
    problems,
  );
  const reserveConcurrency = props.reserveConcurrency ?? true;
  if (!reserveConcurrency && props.reservedConcurrency !== undefined) {
    problems.push(
      `reservedConcurrency (${props.reservedConcurrency}) is set while reserveConcurrency is false; remove one of them`,
    );
  }
  if (!reserveConcurrency && scalingMode === 'provisioned') {
    problems.push(
      'scalingMode "provisioned" caps the database with the reserved concurrency, which reserveConcurrency: false removes; reserve concurrency or use scalingMode "maximum-concurrency"',
    );
  }

  const auxiliaryConnections = auxiliaryProxyConnections(props);
  const proxyMaxConnectionsPercent =
    props.proxyMaxConnectionsPercent ??
    (isToken(concurrency) || isToken(dbPoolSize) || isToken(dbMaxConnections)
      ? 100
      : Math.min(
          100,
          Math.max(
            1,
            Math.ceil((100 * (concurrency * dbPoolSize + auxiliaryConnections)) / dbMaxConnections),
          ),
        ));

  const dbUsers = resolveDatabaseUsers(props, problems);

  const { dbStatementTimeout, dbLockTimeout } = resolveRoleTimeouts(props, problems);

  const breaker = resolveBreakerSettings(props, { fargate, scalingMode, concurrency }, problems, checks);

  if (problems.length > 0) throw new WorkerSettingsError(problems);
  return {
    runtime,
    poller,
    dbStatementTimeoutMs: dbStatementTimeout.toMilliseconds(),
    dbLockTimeoutMs: dbLockTimeout.toMilliseconds(),
    store,
    breaker,
    dbUsers,
    retention,
    fifo,
    timeout,
    visibilityTimeout,
    retentionPeriod,
    dlqRetentionPeriod,
    maxReceiveCount,
    maxMessageSizeBytes,
    payloadVersionRetention,
    maxPayloadBytes,
    memorySize,
    batchSize,
    maxBatchingWindow,
    scalingMode,
    maxConcurrency: concurrency,
    provisionedPollers,
    reservedConcurrency: reserveConcurrency && !fargate ? reservedConcurrency : undefined,
    reserveConcurrency,
    dbPoolSize,
    recordConcurrency,
    dbMaxConnections,
    proxyMaxConnectionsPercent,
    capacity,
  };
}

/**
 * Mode `provisioned`: the pollers and the reserved concurrency from the capacity formula. One poller drives up
 * to {@link INVOKES_PER_POLLER} concurrent invokes, so `maximumPollers` defaults to ⌊safe concurrency / 10⌋
 * (at most 2000) and the reserved concurrency to `maximumPollers` × 10. The reserved concurrency stays the hard
 * cap on the database: it must not exceed the safe concurrency, and it must carry what the maximum of pollers
 * can drive, or Lambda throttles the pollers' invokes (each throttled batch is a receive, on its way to the
 * DLQ). A safe concurrency below 2 × 10 cannot carry the minimum of 2 pollers: refused.
 */
function resolveProvisioned(
  props: Omit<WorkerSettings, 'vpc'>,
  capacity: CapacityResult | undefined,
  capacityTokens: boolean,
  problems: string[],
  raiseCapacity: string,
): { provisionedPollers: ProvisionedPollers; reservedConcurrency: number } {
  const minimumNeeded = MIN_POLLERS * INVOKES_PER_POLLER;
  if (props.maxConcurrency !== undefined) {
    problems.push(
      `maxConcurrency (${props.maxConcurrency}) cannot be used with scalingMode "provisioned": the event source's MaximumConcurrency and ProvisionedPollerConfig are mutually exclusive; remove maxConcurrency (reservedConcurrency caps a provisioned worker) or set scalingMode "maximum-concurrency"`,
    );
  }
  const check = (name: string, value: number | undefined, min: number, max: number): boolean => {
    if (value === undefined || isToken(value)) return true;
    if (Number.isInteger(value) && value >= min && value <= max) return true;
    problems.push(
      `${name} (${value}) must be a whole number from ${min} to ${max} (the SQS event source limits); set a value in that range`,
    );
    return false;
  };
  check('minimumPollers', props.minimumPollers, MIN_POLLERS, MAX_MINIMUM_POLLERS);
  check('maximumPollers', props.maximumPollers, MIN_POLLERS, MAX_MAXIMUM_POLLERS);

  let maximumPollers = props.maximumPollers;
  if (maximumPollers === undefined) {
    if (capacity) {
      maximumPollers = Math.min(
        MAX_MAXIMUM_POLLERS,
        Math.floor(capacity.safeConcurrency / INVOKES_PER_POLLER),
      );
      if (maximumPollers < MIN_POLLERS) {
        problems.push(
          `scalingMode "provisioned" needs a safe worker concurrency of at least ${minimumNeeded} (${MIN_POLLERS} pollers, the minimum, × ${INVOKES_PER_POLLER} concurrent invokes each), but the safe worker concurrency is ${capacity.safeConcurrency} (${capacity.explanation}); use scalingMode "maximum-concurrency" or ${raiseCapacity}`,
        );
        maximumPollers = MIN_POLLERS;
      }
    } else {
      if (capacityTokens) {
        problems.push(
          'a capacity input is a deploy-time token, so maximumPollers has no default; set maximumPollers and reservedConcurrency',
        );
      }
      maximumPollers = MIN_POLLERS;
    }
  } else if (
    capacity &&
    !isToken(maximumPollers) &&
    maximumPollers * INVOKES_PER_POLLER > capacity.safeConcurrency
  ) {
    problems.push(
      `maximumPollers (${maximumPollers}) can drive ${maximumPollers * INVOKES_PER_POLLER} concurrent invokes, above the safe worker concurrency: ${capacity.explanation}; lower maximumPollers to ${Math.floor(capacity.safeConcurrency / INVOKES_PER_POLLER)} or less, or ${raiseCapacity}`,
    );
  }
  const minimumPollers = props.minimumPollers ?? MIN_POLLERS;
  if (!isToken(minimumPollers) && !isToken(maximumPollers) && minimumPollers > maximumPollers) {
    problems.push(
      `minimumPollers (${minimumPollers}) must not exceed maximumPollers (${maximumPollers}); lower minimumPollers or raise maximumPollers`,
    );
  }

  const reservedConcurrency = props.reservedConcurrency ?? maximumPollers * INVOKES_PER_POLLER;
  if (props.reservedConcurrency !== undefined && !isToken(props.reservedConcurrency)) {
    const given = props.reservedConcurrency;
    if (!Number.isInteger(given) || given < ESM_MIN_CONCURRENCY || given > MAX_RESERVED_CONCURRENCY) {
      problems.push(
        `reservedConcurrency (${given}) must be a whole number from ${ESM_MIN_CONCURRENCY} to ${MAX_RESERVED_CONCURRENCY}; set a value in that range`,
      );
    } else {
      if (capacity && given > capacity.safeConcurrency) {
        problems.push(
          `reservedConcurrency (${given}) exceeds the safe worker concurrency: ${capacity.explanation}; with scalingMode "provisioned" the reserved concurrency is the only cap on the database, so lower reservedConcurrency or ${raiseCapacity}`,
        );
      }
      if (!isToken(maximumPollers) && given < maximumPollers * INVOKES_PER_POLLER) {
        problems.push(
          `reservedConcurrency (${given}) is below what maximumPollers (${maximumPollers}) can drive (${maximumPollers * INVOKES_PER_POLLER} concurrent invokes), so Lambda would throttle the pollers and every throttled batch counts as a receive toward the DLQ; raise reservedConcurrency to ${maximumPollers * INVOKES_PER_POLLER} or lower maximumPollers to ${Math.floor(given / INVOKES_PER_POLLER)}`,
        );
      }
    }
  }
  return { provisionedPollers: { minimumPollers, maximumPollers }, reservedConcurrency };
}

/**
 * What bounds the worker's payload memory: the function's memory (the task's with runtime "fargate") and the
 * records that hold a payload at once. Per message, `recordConcurrency`; per batch on Lambda, the whole batch: its
 * payloads are read before the batch transaction opens (no connection waits on S3) and kept until it commits (a
 * redo needs them again). The poller never holds more than `recordConcurrency` records, in either mode.
 */
function payloadMemory(
  props: Pick<WorkerSettings, 'commitMode' | 'tracing'>,
  values: {
    fargate: boolean;
    poller: PollerSettings | undefined;
    memorySize: number;
    batchSize: number;
    recordConcurrency: number;
  },
): PayloadMemory {
  const { fargate, poller, memorySize, batchSize, recordConcurrency } = values;
  // A traced poller's task runs the X-Ray daemon beside it, within the same task memory.
  const memory =
    fargate && poller
      ? {
          name: 'taskMemoryMiB' as const,
          mib: poller.taskMemoryMiB,
          ...(props.tracing
            ? { reserved: { mib: XRAY_DAEMON_MEMORY_MIB, by: 'the X-Ray daemon beside it, tracing' } }
            : {}),
        }
      : { name: 'memorySize' as const, mib: memorySize };
  const recordsInFlight =
    !fargate && props.commitMode === 'per-batch'
      ? {
          count: batchSize,
          why: `batchSize ${batchSize}: commitMode per-batch reads a batch's payloads before its transaction and keeps them until it commits`,
          lower: 'lower batchSize (or use commitMode per-message)',
        }
      : {
          count: recordConcurrency,
          why: `recordConcurrency ${recordConcurrency}`,
          lower: 'lower recordConcurrency',
        };
  return { memory, recordsInFlight };
}
