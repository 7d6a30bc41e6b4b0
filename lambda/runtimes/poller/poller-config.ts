import { DYNAMODB_MAX_RECORD_CONCURRENCY, loadConfig, type WorkerConfig } from '../../config.ts';
import { ConfigError } from '../../errors.ts';
import { POLLER_DEFAULTS, POLLER_LIMITS } from './constants.ts';

/** The poller's own settings, read from `WORKER_QUEUE_URL`, the SQS endpoint variables and `POLLER_*`. */
export interface PollerConfig {
  /** `WORKER_QUEUE_URL`: the queue to consume. */
  readonly queueUrl: string;
  /** `SQS_ENDPOINT`, else `AWS_ENDPOINT_URL_SQS`, else `AWS_ENDPOINT_URL` (as the AWS CLI); unset in AWS. */
  readonly sqsEndpoint: string | undefined;
  /**
   * `POLLER_CONCURRENCY`: records in flight at most, 1 – `DB_POOL_SIZE` (each holds a connection); with
   * `WORKER_COMMIT_MODE=per-batch` 1 – `DB_POOL_SIZE` × `POLLER_BATCH_SIZE` (each batch holds one); with
   * `WORKER_STORE=dynamodb` 1 – 10 (the DynamoDB store's limit, as `WORKER_RECORD_CONCURRENCY`'s).
   * @default the upper bound
   */
  readonly concurrency: number;
  /** `POLLER_BATCH_SIZE`: messages per receive, 1–10. @default 10 */
  readonly batchSize: number;
  /** `POLLER_WAIT_SECONDS`: long-poll wait, 0–20. @default 20 */
  readonly waitSeconds: number;
  /** `POLLER_VISIBILITY_SECONDS`: the lease a receive takes, 2–43,200; renewed at half. @default 30 */
  readonly visibilitySeconds: number;
  /** `POLLER_STOP_TIMEOUT_SECONDS`: how long a stop waits for records in flight, 1–3,600. @default 30 */
  readonly stopTimeoutSeconds: number;
  /** `POLLER_MAX_EXTENSION_SECONDS`: the most the heartbeat extends one message in total. @default 3600 */
  readonly maxExtensionSeconds: number;
  /** `POLLER_BATCH_TIMEOUT_SECONDS`: the time a received batch gets, as a Lambda its function timeout. @default 30 */
  readonly batchTimeoutSeconds: number;
  /** `POLLER_PROBE_TIMEOUT_MS`: a probe of the store without an answer after this long failed. @default 5000 */
  readonly probeTimeoutMs: number;
  /** `POLLER_PROBE_BACKOFF_BASE_MS`: shortest pause and first probe wait (doubling). @default 1000 */
  readonly probeBackoffBaseMs: number;
  /** `POLLER_PROBE_BACKOFF_MAX_MS`: longest wait between two probes while paused. @default 30000 */
  readonly probeBackoffMaxMs: number;
  /** `POLLER_HALF_OPEN_MS`: one record at a time for this long after a good probe. @default 5000 */
  readonly halfOpenMs: number;
  /**
   * `POLLER_ADAPTIVE_CONCURRENCY`: `on` moves the records in flight with the database's signals of load, between
   * `concurrencyFloor` and `concurrency` (docs/poller.md, "Adaptive concurrency"); `off` keeps them at
   * `concurrency`. @default 'on'
   */
  readonly adaptiveConcurrency: 'on' | 'off';
  /** `POLLER_CONCURRENCY_FLOOR`: the lowest the adaptive limit goes, 1 – `POLLER_CONCURRENCY`. @default 1 */
  readonly concurrencyFloor: number;
}

/** Everything the poller reads from its environment: the worker's settings and its own. */
export interface PollerProcessConfig {
  readonly worker: WorkerConfig;
  readonly poller: PollerConfig;
}

/** The variables that name an SQS endpoint, in the order they are honoured. */
export const SQS_ENDPOINT_VARIABLES = ['SQS_ENDPOINT', 'AWS_ENDPOINT_URL_SQS', 'AWS_ENDPOINT_URL'] as const;

/**
 * Reads and validates the poller's environment once: every variable of the Lambda worker (`loadConfig`: `DB_*`,
 * `DATABASE_URL`, `WORKER_*`, …) plus `WORKER_QUEUE_URL`, the SQS endpoint and `POLLER_*`. Every problem of both
 * is reported at once, each naming the variable, the value given and the fix. With `WORKER_STORE=dynamodb` no
 * database is read (`DB_*` is ignored) and `POLLER_CONCURRENCY` is bounded by the DynamoDB store's limit instead of
 * the pool.
 *
 * @throws ConfigError listing every invalid or missing variable.
 *
 * @example
 * ```ts
 * const { worker, poller } = loadPollerConfig(); // a bad variable stops the container at start, naming it
 * ```
 */
export function loadPollerConfig(env: Record<string, string | undefined> = process.env): PollerProcessConfig {
  const problems: string[] = [];
  let worker: WorkerConfig | undefined;
  try {
    worker = loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(...error.message.split('\n- ').slice(1));
  }
  const whole = (name: string, fallback: number, range: readonly [number, number], fix: string) =>
    wholeVariable(env, problems, { name, fallback, range, fix });
  const queue = readQueue(env, problems);
  const batchSize = whole(
    'POLLER_BATCH_SIZE',
    POLLER_DEFAULTS.batchSize,
    POLLER_LIMITS.batchSize,
    'SQS returns at most 10 messages per receive',
  );
  const poolSize = worker?.database.poolSize ?? Number(env.DB_POOL_SIZE || 1);
  const concurrency = readConcurrency(env, whole, { poolSize, batchSize });
  const dynamo = env.WORKER_STORE === 'dynamodb';
  const timings = Object.fromEntries(
    TIMINGS.map(([key, name, limits, fix]) => [
      key,
      whole(name, POLLER_DEFAULTS[key], POLLER_LIMITS[limits], typeof fix === 'string' ? fix : fix(dynamo)),
    ]),
  ) as Record<(typeof TIMINGS)[number][0], number>;
  if (timings.probeBackoffBaseMs > timings.probeBackoffMaxMs) {
    problems.push(
      `POLLER_PROBE_BACKOFF_BASE_MS (${timings.probeBackoffBaseMs}) must not exceed POLLER_PROBE_BACKOFF_MAX_MS (${timings.probeBackoffMaxMs}); lower the base or raise the maximum`,
    );
  }
  const adaptive = readAdaptive(env, problems, whole, concurrency);
  if (problems.length > 0 || !worker) {
    throw new ConfigError(`Invalid poller configuration:\n- ${problems.join('\n- ')}`);
  }
  return { worker, poller: { ...queue, concurrency, batchSize, ...timings, ...adaptive } };
}

/**
 * `POLLER_ADAPTIVE_CONCURRENCY` (`on` | `off`) and `POLLER_CONCURRENCY_FLOOR` (1 – `POLLER_CONCURRENCY`, the
 * adaptive limit's ceiling). The floor is checked with `off` too: a value set is a value meant.
 */
function readAdaptive(
  env: Record<string, string | undefined>,
  problems: string[],
  whole: (name: string, fallback: number, range: readonly [number, number], fix: string) => number,
  concurrency: number,
): Pick<PollerConfig, 'adaptiveConcurrency' | 'concurrencyFloor'> {
  const value = env.POLLER_ADAPTIVE_CONCURRENCY;
  let adaptiveConcurrency: 'on' | 'off' = POLLER_DEFAULTS.adaptiveConcurrency;
  if (value === 'on' || value === 'off') adaptiveConcurrency = value;
  else if (value !== undefined && value !== '') {
    problems.push(
      `POLLER_ADAPTIVE_CONCURRENCY must be on or off (given "${value}"); on lowers the records in flight on the database's signals of load and raises them back up to POLLER_CONCURRENCY, off keeps them at POLLER_CONCURRENCY`,
    );
  }
  const concurrencyFloor = whole(
    'POLLER_CONCURRENCY_FLOOR',
    POLLER_DEFAULTS.concurrencyFloor,
    [1, concurrency],
    `it is the lowest the adaptive limit goes, and POLLER_CONCURRENCY (${concurrency}) is its ceiling; lower the floor or raise POLLER_CONCURRENCY`,
  );
  return { adaptiveConcurrency, concurrencyFloor };
}

/** The poller's timings: its key, variable, limits and the fix a message names, in the order they are checked. */
const TIMINGS = [
  [
    'waitSeconds',
    'POLLER_WAIT_SECONDS',
    'waitSeconds',
    'SQS long polls for at most 20 s; 0 is short polling',
  ],
  [
    'visibilitySeconds',
    'POLLER_VISIBILITY_SECONDS',
    'visibilitySeconds',
    'the heartbeat renews the lease at half, so it must be at least 2 s; SQS allows at most 12 hours',
  ],
  [
    'stopTimeoutSeconds',
    'POLLER_STOP_TIMEOUT_SECONDS',
    'stopTimeoutSeconds',
    "keep it below the container's stop timeout (ECS stopTimeout, at most 120 s on Fargate), or the task is killed first",
  ],
  [
    'maxExtensionSeconds',
    'POLLER_MAX_EXTENSION_SECONDS',
    'maxExtensionSeconds',
    'SQS refuses a visibility ending more than 12 hours after the receive',
  ],
  [
    'batchTimeoutSeconds',
    'POLLER_BATCH_TIMEOUT_SECONDS',
    'batchTimeoutSeconds',
    "it is each batch's budget from its receive (the poller's function timeout); the heartbeat holds a message 12 hours at most",
  ],
  [
    'probeTimeoutMs',
    'POLLER_PROBE_TIMEOUT_MS',
    'probeTimeoutMs',
    (dynamo: boolean) => (dynamo ? 'a probe is one GetItem' : 'a probe is one select 1'),
  ],
  [
    'probeBackoffBaseMs',
    'POLLER_PROBE_BACKOFF_BASE_MS',
    'probeBackoffMs',
    'it is the shortest pause and the first wait between probes',
  ],
  [
    'probeBackoffMaxMs',
    'POLLER_PROBE_BACKOFF_MAX_MS',
    'probeBackoffMs',
    'it caps the wait between probes while paused',
  ],
  ['halfOpenMs', 'POLLER_HALF_OPEN_MS', 'halfOpenMs', '0 resumes full concurrency at the first good probe'],
] as const satisfies readonly (readonly [
  keyof typeof POLLER_DEFAULTS,
  string,
  keyof typeof POLLER_LIMITS,
  string | ((dynamo: boolean) => string),
])[];

/** A whole-number variable within its range, else its default with the problem named (the fix included). */
function wholeVariable(
  env: Record<string, string | undefined>,
  problems: string[],
  variable: { name: string; fallback: number; range: readonly [number, number]; fix: string },
): number {
  const { name, fallback, fix } = variable;
  const [min, max] = variable.range;
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < min || parsed > max) {
    problems.push(`${name} must be a whole number from ${min} to ${max} (given "${value}"); ${fix}`);
    return fallback;
  }
  return parsed;
}

/** The queue to consume (`WORKER_QUEUE_URL`) and the SQS endpoint of a local emulator. */
function readQueue(
  env: Record<string, string | undefined>,
  problems: string[],
): { queueUrl: string; sqsEndpoint: string | undefined } {
  const queueUrl = env.WORKER_QUEUE_URL ?? '';
  if (!queueUrl) {
    problems.push(
      'WORKER_QUEUE_URL is required by the poller: set it to the URL of the queue to consume (https://sqs.<region>.amazonaws.com/<account>/<name>)',
    );
  } else if (!/^https?:\/\/[^/\s]+\/\S+$/.test(queueUrl)) {
    problems.push(
      `WORKER_QUEUE_URL must be a queue URL such as https://sqs.eu-west-1.amazonaws.com/123456789012/case-worker (given "${queueUrl}")`,
    );
  }
  const endpointVariable = SQS_ENDPOINT_VARIABLES.find((name) => env[name]);
  const sqsEndpoint = endpointVariable ? env[endpointVariable] : undefined;
  if (endpointVariable && sqsEndpoint && !URL.canParse(sqsEndpoint)) {
    problems.push(
      `${endpointVariable} must be an absolute URL such as http://127.0.0.1:4566 (given "${sqsEndpoint}"); unset it to use AWS's endpoint`,
    );
  }
  return { queueUrl, sqsEndpoint };
}

/**
 * `POLLER_CONCURRENCY`, the records in flight. Per message, each record in flight holds a connection. Per batch,
 * each batch does (its records run one after another in its transaction), so DB_POOL_SIZE whole batches run at once:
 * a user's pool of 8 means 8 batches. A DynamoDB record holds no pooled connection: the store's limit on records at
 * once applies (as WORKER_RECORD_CONCURRENCY's).
 */
function readConcurrency(
  env: Record<string, string | undefined>,
  whole: (name: string, fallback: number, range: readonly [number, number], fix: string) => number,
  { poolSize, batchSize }: { poolSize: number; batchSize: number },
): number {
  const dynamo = env.WORKER_STORE === 'dynamodb';
  const perBatch = !dynamo && env.WORKER_COMMIT_MODE === 'per-batch';
  const limit = dynamo ? DYNAMODB_MAX_RECORD_CONCURRENCY : perBatch ? poolSize * batchSize : poolSize;
  return whole(
    'POLLER_CONCURRENCY',
    limit,
    [1, limit],
    dynamo
      ? `with WORKER_STORE=dynamodb the poller runs at most ${DYNAMODB_MAX_RECORD_CONCURRENCY} records at once, the DynamoDB store's limit (DB_POOL_SIZE is not read); lower POLLER_CONCURRENCY`
      : perBatch
        ? `with WORKER_COMMIT_MODE=per-batch each batch in flight holds one database connection: at most DB_POOL_SIZE (${poolSize}) batches of POLLER_BATCH_SIZE (${batchSize}) records; raise DB_POOL_SIZE or lower POLLER_CONCURRENCY`
        : `records in flight need a database connection each: raise DB_POOL_SIZE (${poolSize}) or lower POLLER_CONCURRENCY`,
  );
}
