import type { Duration } from 'aws-cdk-lib';
import { checkEntryFiles } from './check-entry-files.ts';
import { checkWorkerEnvironment } from './check-worker-environment.ts';
import { resolveBreakerSettings } from './jobs/resolve-breaker-settings.ts';
import { resolveJobSettings } from './jobs/resolve-job-settings.ts';
import { checkAlarmSettings } from './observability/check-alarm-settings.ts';
import {
  type AdaptiveConcurrencyResolved,
  resolveAdaptiveConcurrency,
} from './resolve-adaptive-concurrency.ts';
import { resolveCapacity } from './resolve-capacity.ts';
import { DEFAULT_MEMORY_MB, payloadMemory, resolvePayloadLimit } from './resolve-payload-limit.ts';
import { resolveQueueSettings } from './resolve-queue-settings.ts';
import { resolveRecordConcurrency } from './resolve-record-concurrency.ts';
import { resolveRetryPolicy } from './resolve-retry-policy.ts';
import { resolveScaling } from './resolve-scaling.ts';
import type { WorkerRuntime } from './runtimes/fargate/fargate-settings.ts';
import {
  checkRuntime,
  FARGATE_DEFAULT_POOL_SIZE,
  type PollerSettings,
} from './runtimes/fargate/resolve-poller-settings.ts';
import { isToken, settingChecks } from './setting-checks.ts';
import type { CapacityResult } from './stores/postgres/capacity.ts';
import { type DatabaseUsers, resolveDatabaseUsers } from './stores/postgres/resolve-database-users.ts';
import { resolveRoleTimeouts } from './stores/postgres/resolve-role-timeouts.ts';
import { checkStoreSettings, type WorkerStore, withStoreDefaults } from './stores/worker-store.ts';
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
  /**
   * The adaptive limit of the records in flight: the breaker's control loop of the mapping's `MaximumConcurrency`
   * (runtime `lambda`, with the breaker in mode `maximum-concurrency`) or the poller's own (runtime `fargate`);
   * `undefined` when `adaptiveConcurrency` is false or no loop can run.
   */
  readonly adaptiveConcurrency: AdaptiveConcurrencyResolved | undefined;
  /** `WORKER_RETRY_POLICY` and `WORKER_HANDLER_FAILURE_CODES` from `retryPolicy` (none when it is unset). */
  readonly retryPolicyEnvironment: Readonly<Record<string, string>>;
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

export { INVOKES_PER_POLLER } from './runtimes/lambda/resolve-lambda-scaling.ts';

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
 * (`check-worker-environment.ts`); `concurrencyFloor` within its runtime's range and at most the limit's ceiling,
 * and neither it nor `adaptiveConcurrency` where no limit moves (`resolve-adaptive-concurrency.ts`). The combinations of store, runtime, commit mode, tracing and scaling mode that
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
  const { range } = checks;

  const runtime = checkRuntime(props, problems);
  const fargate = runtime === 'fargate';
  const queue = resolveQueueSettings(props, fargate, checks, problems);
  const { batchSize, retentionS, dlqRetentionS, ...queueSettings } = queue;
  const retryPolicyEnvironment = resolveRetryPolicy(props, queue.maxReceiveCount, problems);
  const memorySize = props.memorySize ?? DEFAULT_MEMORY_MB;
  const dbPoolSize = props.dbPoolSize ?? (fargate ? FARGATE_DEFAULT_POOL_SIZE : 1);
  const dbMaxConnections = props.dbMaxConnections ?? 80;
  const dbReservedConnections = props.dbReservedConnections ?? 10;
  range('memorySize', memorySize, 128, 10_240, ' MB');
  range('dbPoolSize', dbPoolSize, 1, 100);
  range('dbMaxConnections', dbMaxConnections, 10, 5000);
  range('proxyMaxConnectionsPercent', props.proxyMaxConnectionsPercent, 1, 100);
  range('maxPayloadBytes', props.maxPayloadBytes, 1, 1024 * 1024 * 1024, ' bytes');

  const retention = resolveJobSettings(props, retentionS, dlqRetentionS, problems, checks);
  checkAlarmSettings(props, problems, checks);
  const { recordConcurrency } = resolveRecordConcurrency(
    props,
    { store, fargate, dbPoolSize, batchSize },
    range,
    problems,
  );
  const bound = resolveCapacity(
    props,
    { store, dbPoolSize, dbMaxConnections, dbReservedConnections, recordConcurrency },
    problems,
  );
  const scaling = resolveScaling(
    props,
    { fargate, store, visibilityTimeout: queue.visibilityTimeout, bound },
    checks,
    problems,
  );
  const { poller, scalingMode, maxConcurrency } = scaling;
  const maxPayloadBytes = resolvePayloadLimit(
    props.maxPayloadBytes,
    payloadMemory(props, { fargate, poller, memorySize, batchSize, recordConcurrency }),
    problems,
  );
  const reserveConcurrency = checkReserveConcurrency(props, scalingMode, problems);
  const dbUsers = resolveDatabaseUsers(props, problems);
  const { dbStatementTimeout, dbLockTimeout } = resolveRoleTimeouts(props, problems);
  const breaker = resolveBreakerSettings(
    props,
    { fargate, scalingMode, concurrency: maxConcurrency },
    problems,
    checks,
  );
  const adaptiveConcurrency = resolveAdaptiveConcurrency(
    props,
    { fargate, breaker: breaker !== undefined, scalingMode, maxConcurrency, recordConcurrency },
    problems,
  );

  if (problems.length > 0) throw new WorkerSettingsError(problems);
  return {
    ...queueSettings,
    retryPolicyEnvironment,
    store,
    runtime,
    poller,
    breaker,
    adaptiveConcurrency,
    dbUsers,
    retention,
    dbStatementTimeoutMs: dbStatementTimeout.toMilliseconds(),
    dbLockTimeoutMs: dbLockTimeout.toMilliseconds(),
    maxPayloadBytes,
    memorySize,
    batchSize,
    scalingMode,
    maxConcurrency,
    provisionedPollers: scaling.provisionedPollers,
    reservedConcurrency: reserveConcurrency && !fargate ? scaling.reservedConcurrency : undefined,
    reserveConcurrency,
    dbPoolSize,
    recordConcurrency,
    dbMaxConnections,
    proxyMaxConnectionsPercent: proxyMaxConnectionsPercent(props, {
      maxConcurrency,
      dbPoolSize,
      dbMaxConnections,
    }),
    capacity: bound.capacity,
  };
}

/** `reserveConcurrency` (default true) and the settings it cannot go with. */
function checkReserveConcurrency(
  props: Omit<WorkerSettings, 'vpc'>,
  scalingMode: ScalingMode,
  problems: string[],
): boolean {
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
  return reserveConcurrency;
}

/**
 * The proxy's share of the database's connections: what the workers and the auxiliary functions hold at most
 * (given, or 100 % while an input is a deploy-time token).
 */
function proxyMaxConnectionsPercent(
  props: Omit<WorkerSettings, 'vpc'>,
  values: { maxConcurrency: number; dbPoolSize: number; dbMaxConnections: number },
): number {
  const { maxConcurrency, dbPoolSize, dbMaxConnections } = values;
  if (props.proxyMaxConnectionsPercent !== undefined) return props.proxyMaxConnectionsPercent;
  if (isToken(maxConcurrency) || isToken(dbPoolSize) || isToken(dbMaxConnections)) return 100;
  const connections = maxConcurrency * dbPoolSize + auxiliaryProxyConnections(props);
  return Math.min(100, Math.max(1, Math.ceil((100 * connections) / dbMaxConnections)));
}
