import { COMMIT_MODES, TERMINAL_POLICIES, WORKER_DEFAULTS } from './constants.ts';
import { parseDatabaseUrl } from './postgres/database-url.ts';

// The worker's environment variables, each with its reader (the value's checks and default): what loadConfig reads.

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
  // Read by config-retry-policy.ts: the policy's codes are checked against the worker's own codes.
  WORKER_RETRY_POLICY: text,
  WORKER_HANDLER_FAILURE_CODES: text,
  WORKER_MAX_BUSINESS_ATTEMPTS: positiveInt(
    'WORKER_MAX_BUSINESS_ATTEMPTS',
    WORKER_DEFAULTS.maxBusinessAttempts,
    1000,
  ),
  WORKER_DEADLINE_GUARD_MS: text,
  WORKER_VERSION: text,
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
  OUTBOX_FAIR_QUEUE_GROUPS: oneOf('OUTBOX_FAIR_QUEUE_GROUPS', ['true', 'false'] as const, 'false'),
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
  CONCURRENCY_ADAPTIVE: oneOf('CONCURRENCY_ADAPTIVE', ['true', 'false'] as const, 'false'),
  CONCURRENCY_FLOOR: (value, invalid) => {
    const floor = positiveInt('CONCURRENCY_FLOOR', 2, 1000)(value, invalid);
    return floor < 2
      ? invalid(
          `CONCURRENCY_FLOOR must be a whole number from 2 to 1000 (given "${value}"): AWS's range of MaximumConcurrency`,
        )
      : floor;
  },
  CONCURRENCY_WINDOW_SECONDS: (value, invalid) => {
    const seconds = positiveInt('CONCURRENCY_WINDOW_SECONDS', 60, 300)(value, invalid);
    return seconds % 60 === 0
      ? seconds
      : invalid(
          `CONCURRENCY_WINDOW_SECONDS must be 60, 120, 180, 240 or 300 (given "${value}"): whole minutes, the resolution of the worker's metrics`,
        );
  },
  CONCURRENCY_METRICS_NAMESPACE: text,
  CONCURRENCY_METRICS_SERVICE: text,
  POWERTOOLS_METRICS_NAMESPACE: text,
  POWERTOOLS_SERVICE_NAME: text,
} satisfies Record<string, Reader<unknown>>;

/** Thrown by a reader's `invalid` and caught by {@link readVariables}; never escapes. */
const INVALID = Symbol('invalid variable');

/**
 * Reads every variable of {@link variables} from `env`. An invalid variable adds its problem to `problems` and
 * reads as unset (its default), so the checks after it still run and every problem is reported at once.
 *
 * @internal
 */
export function readVariables(env: Record<string, string | undefined>, problems: string[]): ConfigVariables {
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
  ) as ConfigVariables;
}

/**
 * The variables as read: each one's value, or its default when unset or invalid.
 *
 * @internal
 */
export type ConfigVariables = { [K in keyof typeof variables]: ReturnType<(typeof variables)[K]> };
