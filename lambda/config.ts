import { COMMIT_MODES, TERMINAL_POLICIES, WORKER_DEFAULTS } from './constants.ts';
import { ConfigError } from './errors.ts';
import { parseDatabaseUrl } from './postgres/database-url.ts';
import type { CommitMode, TerminalPolicy } from './types.ts';

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
}

/**
 * Reads one variable: returns its value as `T`, or `invalid(problem)` with a message that names the variable,
 * the value given and what is expected. `value` is `undefined` when the variable is unset.
 */
type Reader<T> = (value: string | undefined, invalid: (problem: string) => never) => T;

const text: Reader<string | undefined> = (value) => value;

const positiveInt =
  (name: string, fallback: number, max = 1_000_000): Reader<number> =>
  (value, invalid) => {
    if (value === undefined || value === '') return fallback;
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || parsed < 1 || parsed > max)
      return invalid(`${name} must be a whole number from 1 to ${max} (given "${value}")`);
    return parsed;
  };

const optionalSeconds =
  (name: string): Reader<number | undefined> =>
  (value, invalid) => {
    if (value === undefined || value === '') return undefined;
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || parsed < 1 || parsed > 3_153_600_000)
      return invalid(
        `${name} must be a whole number of seconds from 1 to 3153600000 (given "${value}"); unset it to skip`,
      );
    return parsed;
  };

const oneOf =
  <T extends string>(name: string, values: readonly T[], fallback: T): Reader<T> =>
  (value, invalid) => {
    if (value === undefined || value === '') return fallback;
    if (!values.includes(value as T))
      return invalid(`${name} must be one of ${values.join(', ')} (given "${value}")`);
    return value as T;
  };

// Plain readers rather than a zod schema: every rule here is custom, and building ~100 schema objects cost
// ~3 ms of every cold start (docs/performance.md).
const variables = {
  DATABASE_URL: (value, invalid) => {
    if (value === undefined || value === '') return undefined;
    const checked = parseDatabaseUrl(value, 'DATABASE_URL');
    return 'problem' in checked ? invalid(checked.problem) : value;
  },
  DB_HOST: text,
  DB_PORT: positiveInt('DB_PORT', 5432, 65535),
  DB_NAME: text,
  DB_USER: text,
  DB_AUTH: oneOf('DB_AUTH', ['iam', 'password'] as const, 'iam'),
  DB_PASSWORD: text,
  DB_SSL: oneOf('DB_SSL', ['true', 'false'] as const, 'true'),
  DB_POOL_SIZE: positiveInt('DB_POOL_SIZE', WORKER_DEFAULTS.poolSize, 100),
  DB_PREPARE: oneOf('DB_PREPARE', ['true', 'false'] as const, 'false'),
  AWS_REGION: text,
  WORKER_CONSUMER: (value, invalid) => {
    if (value === undefined) return WORKER_DEFAULTS.consumer;
    if (value.length < 1 || value.length > 100)
      return invalid(
        `WORKER_CONSUMER must be 1–100 characters (given ${value.length}); it names this worker's rows in worker_inbox`,
      );
    return value;
  },
  WORKER_RECORD_CONCURRENCY: text,
  WORKER_TERMINAL_POLICY: oneOf('WORKER_TERMINAL_POLICY', TERMINAL_POLICIES, WORKER_DEFAULTS.terminalPolicy),
  WORKER_COMMIT_MODE: oneOf('WORKER_COMMIT_MODE', COMMIT_MODES, WORKER_DEFAULTS.commitMode),
  WORKER_BACKOFF_BASE_SECONDS: positiveInt(
    'WORKER_BACKOFF_BASE_SECONDS',
    WORKER_DEFAULTS.backoffBaseSeconds,
    42_300,
  ),
  WORKER_BACKOFF_MAX_SECONDS: positiveInt(
    'WORKER_BACKOFF_MAX_SECONDS',
    WORKER_DEFAULTS.backoffMaxSeconds,
    42_300,
  ),
  WORKER_MAX_BUSINESS_ATTEMPTS: positiveInt(
    'WORKER_MAX_BUSINESS_ATTEMPTS',
    WORKER_DEFAULTS.maxBusinessAttempts,
    1000,
  ),
  WORKER_DEADLINE_GUARD_MS: text,
  WORKER_FAIL_INVOCATION_ON_FULL_FAILURE: oneOf(
    'WORKER_FAIL_INVOCATION_ON_FULL_FAILURE',
    ['true', 'false'] as const,
    'true',
  ),
  SQS_ENDPOINT: text,
  S3_ENDPOINT: text,
  WORKER_STORE: oneOf('WORKER_STORE', ['postgres', 'dynamodb'] as const, 'postgres'),
  DYNAMODB_TABLE: text,
  DYNAMODB_ENDPOINT: (value, invalid) => {
    if (
      value === undefined ||
      value === '' ||
      (URL.canParse(value) && /^https?:$/.test(new URL(value).protocol))
    ) {
      return value;
    }
    return invalid(
      `DYNAMODB_ENDPOINT must be an http(s) URL such as http://127.0.0.1:8000 (given "${value}"); unset it to use AWS`,
    );
  },
  DYNAMODB_LEASE_MARGIN_SECONDS: positiveInt('DYNAMODB_LEASE_MARGIN_SECONDS', 30, 3600),
  PAYLOAD_MAX_BYTES: positiveInt('PAYLOAD_MAX_BYTES', 64 * 1024 * 1024, 1024 * 1024 * 1024),
  POWERTOOLS_TRACE_ENABLED: oneOf('POWERTOOLS_TRACE_ENABLED', ['true', 'false'] as const, 'false'),
  NOTIFICATION_URL: (value, invalid) => {
    if (value === undefined || value === '' || URL.canParse(value)) return value;
    return invalid(
      `NOTIFICATION_URL must be an absolute URL such as https://notify.example.com/v1/notifications (given "${value}"); unset it to leave the escalation handler out`,
    );
  },
  OUTBOX_QUEUE_URL: text,
  OUTBOX_BATCH_SIZE: positiveInt('OUTBOX_BATCH_SIZE', 50, 500),
  OUTBOX_LEASE_MS: positiveInt('OUTBOX_LEASE_MS', 30_000, 900_000),
  OUTBOX_RUN_GUARD_MS: positiveInt('OUTBOX_RUN_GUARD_MS', 5000, 900_000),
  HEALTH_STATEMENT_TIMEOUT_MS: positiveInt('HEALTH_STATEMENT_TIMEOUT_MS', 5000, 60_000),
  HEALTH_LONG_TRANSACTION_MS: positiveInt('HEALTH_LONG_TRANSACTION_MS', 30_000, 3_600_000),
  RETENTION_SOURCE_SECONDS: optionalSeconds('RETENTION_SOURCE_SECONDS'),
  RETENTION_DLQ_SECONDS: optionalSeconds('RETENTION_DLQ_SECONDS'),
  RETENTION_INBOX_SECONDS: optionalSeconds('RETENTION_INBOX_SECONDS'),
  RETENTION_OUTBOX_SECONDS: optionalSeconds('RETENTION_OUTBOX_SECONDS'),
  RETENTION_EFFECT_LOG_SECONDS: optionalSeconds('RETENTION_EFFECT_LOG_SECONDS'),
  RETENTION_QUARANTINE_SECONDS: optionalSeconds('RETENTION_QUARANTINE_SECONDS'),
  RETENTION_BATCH_SIZE: positiveInt('RETENTION_BATCH_SIZE', 1000, 10_000),
  RETENTION_RUN_GUARD_MS: positiveInt('RETENTION_RUN_GUARD_MS', 10_000, 900_000),
  BREAKER_MAPPING_UUID: text,
  BREAKER_SCALING_MODE: oneOf(
    'BREAKER_SCALING_MODE',
    ['maximum-concurrency', 'provisioned'] as const,
    'maximum-concurrency',
  ),
  BREAKER_MAX_CONCURRENCY: positiveInt('BREAKER_MAX_CONCURRENCY', 2, 1000),
  BREAKER_MINIMUM_POLLERS: positiveInt('BREAKER_MINIMUM_POLLERS', 2, 200),
  BREAKER_MAXIMUM_POLLERS: positiveInt('BREAKER_MAXIMUM_POLLERS', 2, 2000),
  BREAKER_HALF_OPEN_CONCURRENCY: positiveInt('BREAKER_HALF_OPEN_CONCURRENCY', 2, 1000),
  BREAKER_FAILURE_THRESHOLD: positiveInt('BREAKER_FAILURE_THRESHOLD', 2, 100),
  BREAKER_CHECK_INTERVAL_MS: positiveInt('BREAKER_CHECK_INTERVAL_MS', 10_000, 900_000),
  BREAKER_PROBE_TIMEOUT_MS: positiveInt('BREAKER_PROBE_TIMEOUT_MS', 5000, 60_000),
  BREAKER_MIN_OPEN_MS: positiveInt('BREAKER_MIN_OPEN_MS', 60_000, 86_400_000),
  BREAKER_PROBE_BACKOFF_BASE_MS: positiveInt('BREAKER_PROBE_BACKOFF_BASE_MS', 15_000, 86_400_000),
  BREAKER_PROBE_BACKOFF_MAX_MS: positiveInt('BREAKER_PROBE_BACKOFF_MAX_MS', 300_000, 86_400_000),
  BREAKER_HALF_OPEN_MS: positiveInt('BREAKER_HALF_OPEN_MS', 60_000, 86_400_000),
  BREAKER_RUN_GUARD_MS: positiveInt('BREAKER_RUN_GUARD_MS', 5000, 900_000),
} satisfies Record<string, Reader<unknown>>;

/**
 * Records a DynamoDB worker runs at once at most (`WORKER_RECORD_CONCURRENCY`): a Lambda SQS batch of a standard
 * queue holds 10 by default. The synth refuses more (`recordConcurrency`), so a stack never deploys a worker that
 * fails its cold start on it.
 */
export const DYNAMODB_MAX_RECORD_CONCURRENCY = 10;

/** Thrown by a reader's `invalid` and caught by {@link readVariables}; never escapes. */
const INVALID = Symbol('invalid variable');

/**
 * Reads every variable of {@link variables} from `env`. An invalid variable adds its problem to `problems` and
 * reads as unset (its default), so the checks after it still run and every problem is reported at once.
 */
function readVariables(env: Record<string, string | undefined>, problems: string[]) {
  const invalid = (problem: string): never => {
    problems.push(problem);
    throw INVALID;
  };
  const read = <T>(reader: Reader<T>, value: string | undefined): T => {
    try {
      return reader(value, invalid);
    } catch (error) {
      if (error !== INVALID) throw error;
      return reader(undefined, invalid);
    }
  };
  return Object.fromEntries(
    Object.entries(variables).map(([name, reader]) => [name, read<unknown>(reader, env[name])]),
  ) as { [K in keyof typeof variables]: ReturnType<(typeof variables)[K]> };
}

/**
 * The host of `database` when it is an RDS Proxy endpoint (`<name>.proxy-<id>.<region>.rds.amazonaws.com`, and
 * the `.com.cn` form), otherwise `undefined`.
 */
function rdsProxyHost(database: DatabaseConfig): string | undefined {
  let host: string;
  if (database.kind === 'none') return undefined;
  if (database.kind === 'host') host = database.host;
  else {
    try {
      host = new URL(database.url).hostname;
    } catch {
      return undefined;
    }
  }
  return /\.proxy-[a-z0-9]+\.[a-z0-9-]+\.rds\.amazonaws\.com(?:\.cn)?$/i.test(host) ? host : undefined;
}

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
  let database: DatabaseConfig | undefined;
  if (dynamo && !env.DATABASE_URL && !env.DB_HOST) {
    // A DynamoDB worker needs no database; one given anyway (an effect log, say) is read as usual.
    database = { kind: 'none', poolSize: e.DB_POOL_SIZE };
  } else if (e.DATABASE_URL) {
    database = {
      kind: 'url',
      url: e.DATABASE_URL,
      poolSize: e.DB_POOL_SIZE,
      prepare: e.DB_PREPARE === 'true',
    };
  } else if (env.DATABASE_URL) {
    // Given but invalid: its problem is reported; the DB_HOST settings are not what the user meant.
  } else {
    const missing = (['DB_HOST', 'DB_NAME', 'DB_USER'] as const).filter((name) => !e[name]);
    if (e.DB_AUTH === 'iam' && !e.AWS_REGION) missing.push('AWS_REGION' as never);
    if (e.DB_AUTH === 'password' && !e.DB_PASSWORD) missing.push('DB_PASSWORD' as never);
    if (missing.length > 0) {
      problems.push(
        `Set DATABASE_URL (local) or ${missing.join(', ')} (deployed, DB_AUTH=${e.DB_AUTH}); missing: ${missing.join(', ')}`,
      );
    } else {
      database = {
        kind: 'host',
        host: e.DB_HOST as string,
        port: e.DB_PORT,
        database: e.DB_NAME as string,
        user: e.DB_USER as string,
        auth: e.DB_AUTH,
        password: e.DB_PASSWORD,
        region: e.AWS_REGION ?? '',
        ssl: e.DB_SSL === 'true',
        poolSize: e.DB_POOL_SIZE,
        prepare: e.DB_PREPARE === 'true',
      };
    }
  }
  const proxyHost = database?.prepare ? rdsProxyHost(database) : undefined;
  if (proxyHost) {
    problems.push(
      `DB_PREPARE=true is for direct connections only, and ${proxyHost} is an RDS Proxy endpoint: RDS Proxy pins every connection that prepares a statement, one database connection per Lambda environment. Unset DB_PREPARE (or set it to false), or connect to the database instance directly`,
    );
  }

  // DynamoDB records hold no pooled connection: up to a batch (10) at once, all of it by default. Per batch, a batch's
  // records run one after another in its one transaction: 1 (a poller runs several batches at once instead).
  const perBatch = !dynamo && e.WORKER_COMMIT_MODE === 'per-batch';
  const concurrencyLimit = dynamo ? DYNAMODB_MAX_RECORD_CONCURRENCY : e.DB_POOL_SIZE;
  const recordConcurrency =
    e.WORKER_RECORD_CONCURRENCY === undefined || e.WORKER_RECORD_CONCURRENCY === ''
      ? perBatch
        ? 1
        : concurrencyLimit
      : Number(e.WORKER_RECORD_CONCURRENCY);
  if (!Number.isInteger(recordConcurrency) || recordConcurrency < 1 || recordConcurrency > concurrencyLimit) {
    problems.push(
      dynamo
        ? `WORKER_RECORD_CONCURRENCY must be a whole number from 1 to ${DYNAMODB_MAX_RECORD_CONCURRENCY} with WORKER_STORE=dynamodb (given "${e.WORKER_RECORD_CONCURRENCY}")`
        : `WORKER_RECORD_CONCURRENCY must be a whole number from 1 to DB_POOL_SIZE (${e.DB_POOL_SIZE}) (given "${e.WORKER_RECORD_CONCURRENCY}"); raise DB_POOL_SIZE or lower the concurrency`,
    );
  } else if (perBatch && recordConcurrency !== 1) {
    problems.push(
      `WORKER_RECORD_CONCURRENCY must be 1 with WORKER_COMMIT_MODE=per-batch (given "${e.WORKER_RECORD_CONCURRENCY}"): a batch's records run one after another in its one transaction; unset WORKER_RECORD_CONCURRENCY (the poller runs several batches at once, up to POLLER_CONCURRENCY records)`,
    );
  }
  let store: StoreConfig = { kind: 'postgres' };
  if (dynamo) {
    if (!e.DYNAMODB_TABLE) {
      problems.push(
        'WORKER_STORE=dynamodb needs DYNAMODB_TABLE, the table of inbox and domain items; set it',
      );
    }
    if (e.WORKER_COMMIT_MODE === 'per-batch') {
      problems.push(
        'WORKER_COMMIT_MODE=per-batch is a PostgreSQL mode (one transaction per batch); with WORKER_STORE=dynamodb every record is its own TransactWriteItems: unset WORKER_COMMIT_MODE',
      );
    }
    store = {
      kind: 'dynamodb',
      tableName: e.DYNAMODB_TABLE ?? '',
      endpoint: e.DYNAMODB_ENDPOINT || undefined,
      leaseMarginSeconds: e.DYNAMODB_LEASE_MARGIN_SECONDS,
      retention:
        e.RETENTION_SOURCE_SECONDS !== undefined && e.RETENTION_DLQ_SECONDS !== undefined
          ? {
              sourceRetentionSeconds: e.RETENTION_SOURCE_SECONDS,
              dlqRetentionSeconds: e.RETENTION_DLQ_SECONDS,
            }
          : undefined,
    };
  }
  let deadlineGuardMs: number | undefined;
  if (e.WORKER_DEADLINE_GUARD_MS !== undefined && e.WORKER_DEADLINE_GUARD_MS !== '') {
    deadlineGuardMs = Number(e.WORKER_DEADLINE_GUARD_MS);
    if (!Number.isInteger(deadlineGuardMs) || deadlineGuardMs < 0) {
      problems.push(
        `WORKER_DEADLINE_GUARD_MS must be a whole number of milliseconds ≥ 0 (given "${e.WORKER_DEADLINE_GUARD_MS}")`,
      );
    }
  }
  // The worker sets no timeout itself any more (SET and set_config pin RDS Proxy connections): say where they went.
  for (const [variable, replacement] of RETIRED_TIMEOUT_VARIABLES) {
    const value = env[variable];
    if (value !== undefined && value !== '') {
      problems.push(
        `${variable} is no longer read (given "${value}"): ${replacement}; remove it from the worker`,
      );
    }
  }
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
  if (e.BREAKER_MINIMUM_POLLERS > e.BREAKER_MAXIMUM_POLLERS) {
    problems.push(
      `BREAKER_MINIMUM_POLLERS (${e.BREAKER_MINIMUM_POLLERS}) must not exceed BREAKER_MAXIMUM_POLLERS (${e.BREAKER_MAXIMUM_POLLERS}); set them to the mapping's ProvisionedPollerConfig`,
    );
  }
  if (problems.length > 0 || !database)
    throw new ConfigError(`Invalid worker configuration:\n- ${problems.join('\n- ')}`);

  return {
    store,
    database,
    consumer: e.WORKER_CONSUMER,
    recordConcurrency,
    terminalPolicy: e.WORKER_TERMINAL_POLICY,
    commitMode: e.WORKER_COMMIT_MODE,
    backoffBaseSeconds: e.WORKER_BACKOFF_BASE_SECONDS,
    backoffMaxSeconds: e.WORKER_BACKOFF_MAX_SECONDS,
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
    },
  };
}
