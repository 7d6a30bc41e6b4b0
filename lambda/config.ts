import * as z from 'zod';
import { ConfigError } from './errors.ts';

/** How the worker reaches PostgreSQL. */
export type DatabaseConfig =
  | { readonly kind: 'url'; readonly url: string; readonly poolSize: number }
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
      readonly ssl: boolean;
      readonly poolSize: number;
    };

/** Everything the deployed worker reads from its environment, parsed once at cold start. */
export interface WorkerConfig {
  readonly database: DatabaseConfig;
  /** `WORKER_CONSUMER`: the inbox namespace of this worker. */
  readonly consumer: string;
  /** `WORKER_RECORD_CONCURRENCY`: records processed at once; at most the pool size. */
  readonly recordConcurrency: number;
  /** `WORKER_TERMINAL_POLICY`: `quarantine` (store and acknowledge) or `dlq` (report, let SQS move it). */
  readonly terminalPolicy: 'quarantine' | 'dlq';
  /** `WORKER_COMMIT_MODE`: one transaction per message, or one per batch with a savepoint per record. */
  readonly commitMode: 'per-message' | 'per-batch';
  readonly backoffBaseSeconds: number;
  readonly backoffMaxSeconds: number;
  readonly maxBusinessAttempts: number;
  readonly claimLockTimeoutMs: number;
  readonly lockTimeoutMs: number;
  readonly statementTimeoutMs: number;
  /** `WORKER_DEADLINE_GUARD_MS`; when unset the guard follows the observed p99 (at least 2 s). */
  readonly deadlineGuardMs: number | undefined;
  readonly failInvocationOnFullBatchFailure: boolean;
  /** `SQS_ENDPOINT`: a local SQS emulator; unset in AWS. */
  readonly sqsEndpoint: string | undefined;
  /**
   * `NOTIFICATION_URL`: notification service of the example `CaseEscalationRequested` handler; unset → that
   * handler is not registered (it needs a second database connection for the external-effect log).
   */
  readonly notificationUrl: string | undefined;
  /** Outbox relay settings (`lambda/handlers/outbox-relay.ts`). */
  readonly outbox: OutboxRelayConfig;
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

const positiveInt = (name: string, fallback: number, max = 1_000_000) =>
  z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value === '') return fallback;
      const parsed = Number(value);
      if (!Number.isInteger(parsed) || parsed < 1 || parsed > max) {
        ctx.addIssue({
          code: 'custom',
          message: `${name} must be a whole number from 1 to ${max} (given "${value}")`,
        });
        return z.NEVER;
      }
      return parsed;
    });

const oneOf = <T extends string>(name: string, values: readonly T[], fallback: T) =>
  z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value === '') return fallback;
      if (!values.includes(value as T)) {
        ctx.addIssue({
          code: 'custom',
          message: `${name} must be one of ${values.join(', ')} (given "${value}")`,
        });
        return z.NEVER;
      }
      return value as T;
    });

const envSchema = z.object({
  DATABASE_URL: z.string().optional(),
  DB_HOST: z.string().optional(),
  DB_PORT: positiveInt('DB_PORT', 5432, 65535),
  DB_NAME: z.string().optional(),
  DB_USER: z.string().optional(),
  DB_AUTH: oneOf('DB_AUTH', ['iam', 'password'] as const, 'iam'),
  DB_PASSWORD: z.string().optional(),
  DB_SSL: oneOf('DB_SSL', ['true', 'false'] as const, 'true'),
  DB_POOL_SIZE: positiveInt('DB_POOL_SIZE', 1, 100),
  AWS_REGION: z.string().optional(),
  WORKER_CONSUMER: z
    .string()
    .default('case-worker')
    .refine((value) => value.length >= 1 && value.length <= 100, {
      error: (issue) =>
        `WORKER_CONSUMER must be 1–100 characters (given ${String(issue.input).length}); it names this worker's rows in worker_inbox`,
    }),
  WORKER_RECORD_CONCURRENCY: z.string().optional(),
  WORKER_TERMINAL_POLICY: oneOf('WORKER_TERMINAL_POLICY', ['quarantine', 'dlq'] as const, 'quarantine'),
  WORKER_COMMIT_MODE: oneOf('WORKER_COMMIT_MODE', ['per-message', 'per-batch'] as const, 'per-message'),
  WORKER_BACKOFF_BASE_SECONDS: positiveInt('WORKER_BACKOFF_BASE_SECONDS', 2, 42_300),
  WORKER_BACKOFF_MAX_SECONDS: positiveInt('WORKER_BACKOFF_MAX_SECONDS', 900, 42_300),
  WORKER_MAX_BUSINESS_ATTEMPTS: positiveInt('WORKER_MAX_BUSINESS_ATTEMPTS', 10, 1000),
  WORKER_CLAIM_LOCK_TIMEOUT_MS: positiveInt('WORKER_CLAIM_LOCK_TIMEOUT_MS', 1000, 600_000),
  WORKER_LOCK_TIMEOUT_MS: positiveInt('WORKER_LOCK_TIMEOUT_MS', 5000, 600_000),
  WORKER_STATEMENT_TIMEOUT_MS: positiveInt('WORKER_STATEMENT_TIMEOUT_MS', 15_000, 900_000),
  WORKER_DEADLINE_GUARD_MS: z.string().optional(),
  WORKER_FAIL_INVOCATION_ON_FULL_FAILURE: oneOf(
    'WORKER_FAIL_INVOCATION_ON_FULL_FAILURE',
    ['true', 'false'] as const,
    'true',
  ),
  SQS_ENDPOINT: z.string().optional(),
  NOTIFICATION_URL: z
    .string()
    .optional()
    .refine((value) => value === undefined || value === '' || URL.canParse(value), {
      error: (issue) =>
        `NOTIFICATION_URL must be an absolute URL such as https://notify.example.com/v1/notifications (given "${String(issue.input)}"); unset it to leave the escalation handler out`,
    }),
  OUTBOX_QUEUE_URL: z.string().optional(),
  OUTBOX_BATCH_SIZE: positiveInt('OUTBOX_BATCH_SIZE', 50, 500),
  OUTBOX_LEASE_MS: positiveInt('OUTBOX_LEASE_MS', 30_000, 900_000),
  OUTBOX_RUN_GUARD_MS: positiveInt('OUTBOX_RUN_GUARD_MS', 5000, 900_000),
});

/**
 * Reads and validates the worker's environment once. Every problem is collected and reported together, each
 * naming the variable, the value given and what is expected.
 *
 * @throws ConfigError listing every invalid or missing variable.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): WorkerConfig {
  // Parsed once per cold start: zod's JIT would compile a fast path (~5 ms) that is never used again.
  const parsed = envSchema.safeParse(env, { jitless: true });
  const problems = parsed.success
    ? []
    : parsed.error.issues.map((issue) =>
        issue.code === 'custom' ? issue.message : `${issue.path.join('.')}: ${issue.message}`,
      );
  // Keep checking with the invalid variables left at their defaults, so every problem is reported at once.
  const invalid = new Set(parsed.success ? [] : parsed.error.issues.map((issue) => String(issue.path[0])));
  const e = parsed.success
    ? parsed.data
    : envSchema.parse(Object.fromEntries(Object.entries(env).filter(([name]) => !invalid.has(name))), {
        jitless: true,
      });

  let database: DatabaseConfig | undefined;
  if (e.DATABASE_URL) {
    database = { kind: 'url', url: e.DATABASE_URL, poolSize: e.DB_POOL_SIZE };
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
      };
    }
  }

  const recordConcurrency =
    e.WORKER_RECORD_CONCURRENCY === undefined || e.WORKER_RECORD_CONCURRENCY === ''
      ? e.DB_POOL_SIZE
      : Number(e.WORKER_RECORD_CONCURRENCY);
  if (!Number.isInteger(recordConcurrency) || recordConcurrency < 1 || recordConcurrency > e.DB_POOL_SIZE) {
    problems.push(
      `WORKER_RECORD_CONCURRENCY must be a whole number from 1 to DB_POOL_SIZE (${e.DB_POOL_SIZE}) (given "${e.WORKER_RECORD_CONCURRENCY}"); raise DB_POOL_SIZE or lower the concurrency`,
    );
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
  if (e.WORKER_BACKOFF_BASE_SECONDS > e.WORKER_BACKOFF_MAX_SECONDS) {
    problems.push(
      `WORKER_BACKOFF_BASE_SECONDS (${e.WORKER_BACKOFF_BASE_SECONDS}) must not exceed WORKER_BACKOFF_MAX_SECONDS (${e.WORKER_BACKOFF_MAX_SECONDS})`,
    );
  }
  if (problems.length > 0 || !database)
    throw new ConfigError(`Invalid worker configuration:\n- ${problems.join('\n- ')}`);

  return {
    database,
    consumer: e.WORKER_CONSUMER,
    recordConcurrency,
    terminalPolicy: e.WORKER_TERMINAL_POLICY,
    commitMode: e.WORKER_COMMIT_MODE,
    backoffBaseSeconds: e.WORKER_BACKOFF_BASE_SECONDS,
    backoffMaxSeconds: e.WORKER_BACKOFF_MAX_SECONDS,
    maxBusinessAttempts: e.WORKER_MAX_BUSINESS_ATTEMPTS,
    claimLockTimeoutMs: e.WORKER_CLAIM_LOCK_TIMEOUT_MS,
    lockTimeoutMs: e.WORKER_LOCK_TIMEOUT_MS,
    statementTimeoutMs: e.WORKER_STATEMENT_TIMEOUT_MS,
    deadlineGuardMs,
    failInvocationOnFullBatchFailure: e.WORKER_FAIL_INVOCATION_ON_FULL_FAILURE === 'true',
    sqsEndpoint: e.SQS_ENDPOINT || undefined,
    notificationUrl: e.NOTIFICATION_URL || undefined,
    outbox: {
      queueUrl: e.OUTBOX_QUEUE_URL || undefined,
      batchSize: e.OUTBOX_BATCH_SIZE,
      leaseMs: e.OUTBOX_LEASE_MS,
      runGuardMs: e.OUTBOX_RUN_GUARD_MS,
    },
  };
}
