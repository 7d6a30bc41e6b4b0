import { readDatabaseConfig } from './config-database.ts';
import { readRetryPolicy } from './config-retry-policy.ts';
import { type ConfigVariables, readVariables } from './config-variables.ts';
import { DEFAULT_METRICS_NAMESPACE } from './constants.ts';
import { ConfigError } from './errors.ts';
import type { CommitMode, TerminalPolicy } from './types.ts';
import type { RetryPolicy } from './worker/retry-policy.ts';
import { workerVersion } from './worker-version.ts';

/** How the worker reaches PostgreSQL (`none`: a DynamoDB worker given no database settings). */
export type DatabaseConfig = (
  | { readonly kind: 'url'; readonly url: string; readonly poolSize: number }
  | { readonly kind: 'none'; readonly poolSize: number }
  | {
      readonly kind: 'host';
      readonly host: string;
      readonly port: number;
      readonly database: string;
      readonly user: string;
      /** `iam`: a fresh RDS IAM token per connection (RDS Proxy); `password`: `DB_PASSWORD`. */
      readonly auth: 'iam' | 'password';
      readonly password?: string;
      readonly region: string;
      /** `DB_SSL`: TLS that verifies the server's certificate and host name (lambda/postgres/verified-tls.ts). */
      readonly ssl: boolean;
      /** PEM CA(s) to trust instead of Node's defaults (tests, private CAs); unset in AWS. */
      readonly ca?: string;
      readonly poolSize: number;
    }
) & {
  /**
   * `DB_PREPARE`: named prepared statements (postgres.js `prepare: true`), each statement described once per
   * connection and then sent in one round trip instead of two. Only for direct connections (a poller to a
   * database without RDS Proxy, or a pooler that keeps protocol-level prepared statements): RDS Proxy pins every
   * connection that prepares a statement. @default false
   */
  readonly prepare?: boolean;
};

/** Where the worker keeps its inbox and domain state: `WORKER_STORE` and, for DynamoDB, `DYNAMODB_*`. */
export type StoreConfig =
  | { readonly kind: 'postgres' }
  | {
      readonly kind: 'dynamodb';
      /** `DYNAMODB_TABLE`: the table of inbox, quarantine and domain items. */
      readonly tableName: string;
      /** `DYNAMODB_ENDPOINT`: DynamoDB Local; unset in AWS. */
      readonly endpoint: string | undefined;
      /** `DYNAMODB_LEASE_MARGIN_SECONDS`: how long a lease outlives its record's time. @default 30 */
      readonly leaseMarginSeconds: number;
      /** `RETENTION_SOURCE_SECONDS` + `RETENTION_DLQ_SECONDS` when both are set: the inbox items' TTL window. */
      readonly retention:
        | { readonly sourceRetentionSeconds: number; readonly dlqRetentionSeconds: number }
        | undefined;
    };

/** Everything the deployed worker reads from its environment, parsed once at cold start. */
export interface WorkerConfig {
  /** `WORKER_STORE`: PostgreSQL (default) or DynamoDB (docs/dynamodb.md). */
  readonly store: StoreConfig;
  /** The PostgreSQL database; `kind: 'none'` for a DynamoDB worker without database settings. */
  readonly database: DatabaseConfig;
  /** `WORKER_CONSUMER`: the inbox namespace of this worker. */
  readonly consumer: string;
  /**
   * `WORKER_VERSION` (the construct sets the deployed code's hash), else `<function>:<version>` on Lambda, else
   * `unversioned` (`worker-version.ts`): on every record's log line and each attempt the inbox keeps.
   */
  readonly workerVersion: string;
  /**
   * `WORKER_RECORD_CONCURRENCY`: records of a batch processed at once; at most the pool size (the default), 1 with
   * `WORKER_COMMIT_MODE=per-batch`.
   */
  readonly recordConcurrency: number;
  /** `WORKER_TERMINAL_POLICY`: `quarantine` (store and acknowledge) or `dlq` (report, let SQS move it). */
  readonly terminalPolicy: TerminalPolicy;
  /** `WORKER_COMMIT_MODE`: one transaction per message, or one per batch with a savepoint per record. */
  readonly commitMode: CommitMode;
  readonly backoffBaseSeconds: number;
  readonly backoffMaxSeconds: number;
  /**
   * `WORKER_RETRY_POLICY` (`CODE=base:max[:attempts]`, comma-separated): each listed code's own backoff and attempt
   * budget; the codes it may name are the toolkit's and `WORKER_HANDLER_FAILURE_CODES`. @default {} (none)
   */
  readonly retryPolicy: RetryPolicy;
  readonly maxBusinessAttempts: number;
  /** `WORKER_DEADLINE_GUARD_MS`; when unset the guard follows the observed p99 (at least 2 s, at most half the budget). */
  readonly deadlineGuardMs: number | undefined;
  readonly failInvocationOnFullBatchFailure: boolean;
  /** `SQS_ENDPOINT`: a local SQS emulator; unset in AWS. */
  readonly sqsEndpoint: string | undefined;
  /** `S3_ENDPOINT`: a local S3 emulator (path-style requests); unset in AWS. */
  readonly s3Endpoint: string | undefined;
  /** `PAYLOAD_MAX_BYTES`: largest `payloadRef` object the worker reads (1 B – 1 GiB). @default 67108864 (64 MiB) */
  readonly maxPayloadBytes: number;
  /**
   * `POWERTOOLS_TRACE_ENABLED=true`: an X-Ray subsegment per record, linked to the producer's trace (the stack sets
   * it with active tracing, docs/tracing.md). Unlike Powertools' own default, unset means off here: the tracer and
   * the X-Ray SDK are loaded only when it is on. @default false
   */
  readonly tracing: boolean;
  /**
   * `NOTIFICATION_URL`: notification service of the example `CaseEscalationRequested` handler; unset → that
   * handler is not registered (it needs a second database connection for the external-effect log).
   */
  readonly notificationUrl: string | undefined;
  /** Outbox relay settings (`lambda/handlers/outbox-relay.ts`). */
  readonly outbox: OutboxRelayConfig;
  /** Health job settings (`lambda/handlers/health.ts`). */
  readonly health: HealthJobConfig;
  /** Retention job settings (`lambda/handlers/retention.ts`). */
  readonly retention: RetentionJobConfig;
  /** Circuit breaker settings (`lambda/handlers/breaker.ts`). */
  readonly breaker: BreakerConfig;
}

/** Settings of the retention job, read from `RETENTION_*`; an unset window skips its table. */
export interface RetentionJobConfig {
  /** `RETENTION_SOURCE_SECONDS`: the source queue's retention (the inbox guard). */
  readonly sourceRetentionSeconds: number | undefined;
  /** `RETENTION_DLQ_SECONDS`: the DLQ's retention (the inbox guard). */
  readonly dlqRetentionSeconds: number | undefined;
  /** `RETENTION_INBOX_SECONDS`: COMPLETED inbox rows older than this are purged. */
  readonly inboxSeconds: number | undefined;
  /** `RETENTION_OUTBOX_SECONDS`: PUBLISHED outbox rows older than this are purged. */
  readonly outboxSeconds: number | undefined;
  /** `RETENTION_EFFECT_LOG_SECONDS`: settled, unreferenced effect-log rows older than this are purged. */
  readonly effectLogSeconds: number | undefined;
  /** `RETENTION_QUARANTINE_SECONDS`: released quarantine entries older than this are purged. */
  readonly quarantineSeconds: number | undefined;
  /** `RETENTION_BATCH_SIZE`: rows per delete statement (1–10000). @default 1000 */
  readonly batchSize: number;
  /** `RETENTION_RUN_GUARD_MS`: no batch starts with less than this left of the Lambda timeout. @default 10000 */
  readonly runGuardMs: number;
}

/** Settings of the health job, read from `HEALTH_*`. */
export interface HealthJobConfig {
  /** `HEALTH_STATEMENT_TIMEOUT_MS`: bound of every statement of one check (100–60000). @default 5000 */
  readonly statementTimeoutMs: number;
  /** `HEALTH_LONG_TRANSACTION_MS`: a transaction on the toolkit's tables older than this is long-running. @default 30000 */
  readonly longTransactionMs: number;
}

/** Settings of the event source mapping's circuit breaker, read from `BREAKER_*`. */
export interface BreakerConfig {
  /** `BREAKER_MAPPING_UUID`: the worker's event source mapping; required by the breaker only. */
  readonly mappingUuid: string | undefined;
  /** `BREAKER_SCALING_MODE`: how the mapping scales when it runs normally. @default maximum-concurrency */
  readonly scalingMode: 'maximum-concurrency' | 'provisioned';
  /** `BREAKER_MAX_CONCURRENCY`: the mapping's configured MaximumConcurrency (restored on close). @default 2 */
  readonly maxConcurrency: number;
  /** `BREAKER_MINIMUM_POLLERS` / `BREAKER_MAXIMUM_POLLERS`: configured provisioned pollers. @default 2 */
  readonly minimumPollers: number;
  readonly maximumPollers: number;
  /** `BREAKER_HALF_OPEN_CONCURRENCY`: MaximumConcurrency while half-open, 2–1000. @default 2 */
  readonly halfOpenConcurrency: number;
  /** `BREAKER_FAILURE_THRESHOLD`: failed probes in a row that open the breaker. @default 2 */
  readonly failureThreshold: number;
  /** `BREAKER_CHECK_INTERVAL_MS`: time between two ticks. @default 10000 */
  readonly checkIntervalMs: number;
  /** `BREAKER_PROBE_TIMEOUT_MS`: a probe without an answer after this long failed. @default 5000 */
  readonly probeTimeoutMs: number;
  /** `BREAKER_MIN_OPEN_MS`: shortest time open before the first probe. @default 60000 */
  readonly minOpenMs: number;
  /** `BREAKER_PROBE_BACKOFF_BASE_MS` / `BREAKER_PROBE_BACKOFF_MAX_MS`: probe backoff while open. @default 15000 / 300000 */
  readonly probeBackoffBaseMs: number;
  readonly probeBackoffMaxMs: number;
  /** `BREAKER_HALF_OPEN_MS`: good probes at low concurrency before the scaling is restored. @default 60000 */
  readonly halfOpenMs: number;
  /** `BREAKER_RUN_GUARD_MS`: a run stops ticking this long before the Lambda timeout. @default 5000 */
  readonly runGuardMs: number;
  /** The control loop of the mapping's `MaximumConcurrency` from the fleet's signals of load (`CONCURRENCY_*`). */
  readonly concurrency: FleetConcurrencyConfig;
}

/** Settings of the breaker's control loop of the mapping's `MaximumConcurrency` (lambda/breaker/fleet-limit.ts). */
export interface FleetConcurrencyConfig {
  /** `CONCURRENCY_ADAPTIVE=true`: the loop runs (mode `maximum-concurrency` only). @default false */
  readonly enabled: boolean;
  /** `CONCURRENCY_FLOOR`: the lowest `MaximumConcurrency` the loop sets, 2–1000. @default 2 */
  readonly floor: number;
  /** `CONCURRENCY_WINDOW_SECONDS`: the window of metrics one decision reads, 60–300 in whole minutes. @default 60 */
  readonly windowSeconds: number;
  /** `CONCURRENCY_METRICS_NAMESPACE`: the worker's metrics namespace. @default POWERTOOLS_METRICS_NAMESPACE, else SqsInboxWorker */
  readonly namespace: string;
  /** `CONCURRENCY_METRICS_SERVICE`: the worker's `service` dimension. @default POWERTOOLS_SERVICE_NAME, else sqs-inbox-worker */
  readonly service: string;
}

/** Settings of the outbox relay, read from `OUTBOX_*`. */
export interface OutboxRelayConfig {
  /** `OUTBOX_QUEUE_URL`: queue the relay publishes to; required by the relay only. */
  readonly queueUrl: string | undefined;
  /** `OUTBOX_BATCH_SIZE`: rows claimed per round (1–500). @default 50 */
  readonly batchSize: number;
  /** `OUTBOX_LEASE_MS`: how long a claim keeps other relays off a row. @default 30000 */
  readonly leaseMs: number;
  /** `OUTBOX_RUN_GUARD_MS`: no new round starts with less than this left of the Lambda timeout. @default 5000 */
  readonly runGuardMs: number;
  /**
   * `OUTBOX_FAIR_QUEUE_GROUPS`: on a standard queue, send each event with MessageGroupId = its aggregateId, so SQS
   * fair queues keep one noisy aggregate from delaying the others (a FIFO queue gets it anyway). @default false
   */
  readonly fairQueueGroups: boolean;
}

/**
 * Records a DynamoDB worker runs at once at most (`WORKER_RECORD_CONCURRENCY`): a Lambda SQS batch of a standard
 * queue holds 10 by default. The synth refuses more (`recordConcurrency`), so a stack never deploys a worker that
 * fails its cold start on it.
 */
export const DYNAMODB_MAX_RECORD_CONCURRENCY = 10;

/** Variables of earlier versions that set timeouts per transaction, and where each setting lives now. */
const RETIRED_TIMEOUT_VARIABLES: ReadonlyArray<readonly [string, string]> = [
  [
    'WORKER_CLAIM_LOCK_TIMEOUT_MS',
    'a delivery of a key in flight elsewhere is now retried at once (IN_PROGRESS_ELSEWHERE), without a wait',
  ],
  [
    'WORKER_LOCK_TIMEOUT_MS',
    "the lock timeout is the worker role's default, set by the migration function from DB_LOCK_TIMEOUT_MS",
  ],
  [
    'WORKER_STATEMENT_TIMEOUT_MS',
    "the statement timeout is the worker role's default, set by the migration function from DB_STATEMENT_TIMEOUT_MS",
  ],
];

/**
 * Reads and validates the worker's environment once. Every problem is collected and reported together, each
 * naming the variable, the value given and what is expected.
 *
 * @throws ConfigError listing every invalid or missing variable.
 *
 * @example
 * ```ts
 * const config = loadConfig(); // module scope: a bad variable fails the cold start, naming the variable
 * const sql = createSql(config.database);
 * ```
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): WorkerConfig {
  const problems: string[] = [];
  const e = readVariables(env, problems);
  const dynamo = e.WORKER_STORE === 'dynamodb';
  const database = readDatabaseConfig(env, e, dynamo, problems);
  const recordConcurrency = readRecordConcurrency(e, dynamo, problems);
  const store = readStore(e, dynamo, problems);
  const deadlineGuardMs = readDeadlineGuard(e, problems);
  const retryPolicy = readRetryPolicy(e, problems);
  checkRetiredVariables(env, problems);
  checkRanges(e, problems);
  if (problems.length > 0 || !database)
    throw new ConfigError(`Invalid worker configuration:\n- ${problems.join('\n- ')}`);
  return {
    ...workerConfig(e, { store, database, recordConcurrency, deadlineGuardMs, retryPolicy }),
    workerVersion: workerVersion(env),
  };
}

/**
 * The records a batch runs at once. DynamoDB records hold no pooled connection: up to a batch (10) at once, all of
 * it by default. Per batch, a batch's records run one after another in its one transaction: 1 (a poller runs
 * several batches at once instead).
 */
function readRecordConcurrency(e: ConfigVariables, dynamo: boolean, problems: string[]): number {
  const perBatch = !dynamo && e.WORKER_COMMIT_MODE === 'per-batch';
  const concurrencyLimit = dynamo ? DYNAMODB_MAX_RECORD_CONCURRENCY : e.DB_POOL_SIZE;
  const given = e.WORKER_RECORD_CONCURRENCY;
  const recordConcurrency =
    given === undefined || given === '' ? (perBatch ? 1 : concurrencyLimit) : Number(given);
  if (!Number.isInteger(recordConcurrency) || recordConcurrency < 1 || recordConcurrency > concurrencyLimit) {
    problems.push(
      dynamo
        ? `WORKER_RECORD_CONCURRENCY must be a whole number from 1 to ${DYNAMODB_MAX_RECORD_CONCURRENCY} with WORKER_STORE=dynamodb (given "${given}")`
        : `WORKER_RECORD_CONCURRENCY must be a whole number from 1 to DB_POOL_SIZE (${e.DB_POOL_SIZE}) (given "${given}"); raise DB_POOL_SIZE or lower the concurrency`,
    );
  } else if (perBatch && recordConcurrency !== 1) {
    problems.push(
      `WORKER_RECORD_CONCURRENCY must be 1 with WORKER_COMMIT_MODE=per-batch (given "${given}"): a batch's records run one after another in its one transaction; unset WORKER_RECORD_CONCURRENCY (the poller runs several batches at once, up to POLLER_CONCURRENCY records)`,
    );
  }
  return recordConcurrency;
}

/** The store: PostgreSQL, or DynamoDB with its table, endpoint, lease margin and the inbox items' TTL. */
function readStore(e: ConfigVariables, dynamo: boolean, problems: string[]): StoreConfig {
  if (!dynamo) return { kind: 'postgres' };
  if (!e.DYNAMODB_TABLE) {
    problems.push('WORKER_STORE=dynamodb needs DYNAMODB_TABLE, the table of inbox and domain items; set it');
  }
  if (e.WORKER_COMMIT_MODE === 'per-batch') {
    problems.push(
      'WORKER_COMMIT_MODE=per-batch is a PostgreSQL mode (one transaction per batch); with WORKER_STORE=dynamodb every record is its own TransactWriteItems: unset WORKER_COMMIT_MODE',
    );
  }
  return {
    kind: 'dynamodb',
    tableName: e.DYNAMODB_TABLE ?? '',
    endpoint: e.DYNAMODB_ENDPOINT || undefined,
    leaseMarginSeconds: e.DYNAMODB_LEASE_MARGIN_SECONDS,
    retention:
      e.RETENTION_SOURCE_SECONDS !== undefined && e.RETENTION_DLQ_SECONDS !== undefined
        ? { sourceRetentionSeconds: e.RETENTION_SOURCE_SECONDS, dlqRetentionSeconds: e.RETENTION_DLQ_SECONDS }
        : undefined,
  };
}

/** `WORKER_DEADLINE_GUARD_MS`, when given. */
function readDeadlineGuard(e: ConfigVariables, problems: string[]): number | undefined {
  if (e.WORKER_DEADLINE_GUARD_MS === undefined || e.WORKER_DEADLINE_GUARD_MS === '') return undefined;
  const deadlineGuardMs = Number(e.WORKER_DEADLINE_GUARD_MS);
  if (!Number.isInteger(deadlineGuardMs) || deadlineGuardMs < 0) {
    problems.push(
      `WORKER_DEADLINE_GUARD_MS must be a whole number of milliseconds ≥ 0 (given "${e.WORKER_DEADLINE_GUARD_MS}")`,
    );
  }
  return deadlineGuardMs;
}

/** The worker sets no timeout itself any more (SET and set_config pin RDS Proxy connections): say where they went. */
function checkRetiredVariables(env: Record<string, string | undefined>, problems: string[]): void {
  for (const [variable, replacement] of RETIRED_TIMEOUT_VARIABLES) {
    const value = env[variable];
    if (value !== undefined && value !== '') {
      problems.push(
        `${variable} is no longer read (given "${value}"): ${replacement}; remove it from the worker`,
      );
    }
  }
}

/** The pairs whose lower bound must not exceed their upper one. */
function checkRanges(e: ConfigVariables, problems: string[]): void {
  if (e.WORKER_BACKOFF_BASE_SECONDS > e.WORKER_BACKOFF_MAX_SECONDS) {
    problems.push(
      `WORKER_BACKOFF_BASE_SECONDS (${e.WORKER_BACKOFF_BASE_SECONDS}) must not exceed WORKER_BACKOFF_MAX_SECONDS (${e.WORKER_BACKOFF_MAX_SECONDS})`,
    );
  }
  if (e.BREAKER_PROBE_BACKOFF_BASE_MS > e.BREAKER_PROBE_BACKOFF_MAX_MS) {
    problems.push(
      `BREAKER_PROBE_BACKOFF_BASE_MS (${e.BREAKER_PROBE_BACKOFF_BASE_MS}) must not exceed BREAKER_PROBE_BACKOFF_MAX_MS (${e.BREAKER_PROBE_BACKOFF_MAX_MS}); lower the base or raise the maximum`,
    );
  }
  if (
    e.CONCURRENCY_ADAPTIVE === 'true' &&
    e.BREAKER_SCALING_MODE === 'maximum-concurrency' &&
    e.CONCURRENCY_FLOOR > e.BREAKER_MAX_CONCURRENCY
  ) {
    problems.push(
      `CONCURRENCY_FLOOR (${e.CONCURRENCY_FLOOR}) must not exceed BREAKER_MAX_CONCURRENCY (${e.BREAKER_MAX_CONCURRENCY}): the floor of the mapping's MaximumConcurrency is below its configured ceiling; lower the floor`,
    );
  }
  if (e.BREAKER_MINIMUM_POLLERS > e.BREAKER_MAXIMUM_POLLERS) {
    problems.push(
      `BREAKER_MINIMUM_POLLERS (${e.BREAKER_MINIMUM_POLLERS}) must not exceed BREAKER_MAXIMUM_POLLERS (${e.BREAKER_MAXIMUM_POLLERS}); set them to the mapping's ProvisionedPollerConfig`,
    );
  }
}

/** The configuration from valid variables and the parts read above. */
function workerConfig(
  e: ConfigVariables,
  parts: Pick<WorkerConfig, 'store' | 'database' | 'recordConcurrency' | 'deadlineGuardMs' | 'retryPolicy'>,
): Omit<WorkerConfig, 'workerVersion'> {
  const { store, database, recordConcurrency, deadlineGuardMs, retryPolicy } = parts;
  return {
    store,
    database,
    consumer: e.WORKER_CONSUMER,
    recordConcurrency,
    terminalPolicy: e.WORKER_TERMINAL_POLICY,
    commitMode: e.WORKER_COMMIT_MODE,
    backoffBaseSeconds: e.WORKER_BACKOFF_BASE_SECONDS,
    backoffMaxSeconds: e.WORKER_BACKOFF_MAX_SECONDS,
    retryPolicy,
    maxBusinessAttempts: e.WORKER_MAX_BUSINESS_ATTEMPTS,
    deadlineGuardMs,
    failInvocationOnFullBatchFailure: e.WORKER_FAIL_INVOCATION_ON_FULL_FAILURE === 'true',
    sqsEndpoint: e.SQS_ENDPOINT || undefined,
    s3Endpoint: e.S3_ENDPOINT || undefined,
    maxPayloadBytes: e.PAYLOAD_MAX_BYTES,
    tracing: e.POWERTOOLS_TRACE_ENABLED === 'true',
    notificationUrl: e.NOTIFICATION_URL || undefined,
    outbox: {
      queueUrl: e.OUTBOX_QUEUE_URL || undefined,
      batchSize: e.OUTBOX_BATCH_SIZE,
      leaseMs: e.OUTBOX_LEASE_MS,
      runGuardMs: e.OUTBOX_RUN_GUARD_MS,
      fairQueueGroups: e.OUTBOX_FAIR_QUEUE_GROUPS === 'true',
    },
    retention: {
      sourceRetentionSeconds: e.RETENTION_SOURCE_SECONDS,
      dlqRetentionSeconds: e.RETENTION_DLQ_SECONDS,
      inboxSeconds: e.RETENTION_INBOX_SECONDS,
      outboxSeconds: e.RETENTION_OUTBOX_SECONDS,
      effectLogSeconds: e.RETENTION_EFFECT_LOG_SECONDS,
      quarantineSeconds: e.RETENTION_QUARANTINE_SECONDS,
      batchSize: e.RETENTION_BATCH_SIZE,
      runGuardMs: e.RETENTION_RUN_GUARD_MS,
    },
    health: {
      statementTimeoutMs: Math.max(100, e.HEALTH_STATEMENT_TIMEOUT_MS),
      longTransactionMs: e.HEALTH_LONG_TRANSACTION_MS,
    },
    breaker: {
      mappingUuid: e.BREAKER_MAPPING_UUID || undefined,
      scalingMode: e.BREAKER_SCALING_MODE,
      maxConcurrency: e.BREAKER_MAX_CONCURRENCY,
      minimumPollers: e.BREAKER_MINIMUM_POLLERS,
      maximumPollers: e.BREAKER_MAXIMUM_POLLERS,
      halfOpenConcurrency: e.BREAKER_HALF_OPEN_CONCURRENCY,
      failureThreshold: e.BREAKER_FAILURE_THRESHOLD,
      checkIntervalMs: e.BREAKER_CHECK_INTERVAL_MS,
      probeTimeoutMs: e.BREAKER_PROBE_TIMEOUT_MS,
      minOpenMs: e.BREAKER_MIN_OPEN_MS,
      probeBackoffBaseMs: e.BREAKER_PROBE_BACKOFF_BASE_MS,
      probeBackoffMaxMs: e.BREAKER_PROBE_BACKOFF_MAX_MS,
      halfOpenMs: e.BREAKER_HALF_OPEN_MS,
      runGuardMs: e.BREAKER_RUN_GUARD_MS,
      concurrency: {
        enabled: e.CONCURRENCY_ADAPTIVE === 'true',
        floor: e.CONCURRENCY_FLOOR,
        windowSeconds: e.CONCURRENCY_WINDOW_SECONDS,
        namespace:
          e.CONCURRENCY_METRICS_NAMESPACE || e.POWERTOOLS_METRICS_NAMESPACE || DEFAULT_METRICS_NAMESPACE,
        service: e.CONCURRENCY_METRICS_SERVICE || e.POWERTOOLS_SERVICE_NAME || 'sqs-inbox-worker',
      },
    },
  };
}
