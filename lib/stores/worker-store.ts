import { Duration, Token } from 'aws-cdk-lib';
import type { WorkerSettings } from '../worker-settings.ts';
import { type DynamoDbCapacityResult, safeDynamoDbConcurrency } from './dynamodb/dynamodb-capacity.ts';
import { RESERVED_KEY_PREFIXES } from './dynamodb/worker-table.ts';

/**
 * Where the worker keeps its inbox and the domain state (`WORKER_STORE`): RDS PostgreSQL behind RDS Proxy, or
 * one DynamoDB table.
 */
export type WorkerStore = 'postgres' | 'dynamodb';

/**
 * Props that configure the PostgreSQL store and the functions that need it (migrations, relay, health job,
 * retention job, breaker). With `store: 'dynamodb'` there is no database, so each is refused rather than ignored.
 */
const POSTGRES_ONLY = [
  'vpcSubnets',
  'dbPoolSize',
  'dbMaxConnections',
  'dbReservedConnections',
  'dbWriteIopsBudget',
  'writeIopsPerMessage',
  'dbStatementTimeout',
  'dbLockTimeout',
  'proxyMaxConnectionsPercent',
  'instanceType',
  'postgresVersion',
  'multiAz',
  'allocatedStorageGiB',
  'databaseName',
  'workerDbUser',
  'relayDbUser',
  'opsDbUser',
  'healthDbUser',
  'retentionDbUser',
  'secretRotationInterval',
  'migrationsDirectory',
  'outboxRelayEntry',
  'outboxRelaySchedule',
  'outboxRelayMaxRun',
  'outboxPendingAgeSlo',
  'healthCheckEntry',
  'retentionSchedule',
  'retentionMaxRun',
  'inboxRetention',
  'outboxRetention',
  'effectLogRetention',
  'quarantineRetention',
  'connectionsAlarmPercent',
] as const satisfies readonly (keyof WorkerSettings)[];

/** The PostgreSQL store's scheduled functions, and why the DynamoDB store has none of them. */
const POSTGRES_FUNCTIONS = {
  retention: "the DynamoDB table's TTL (attribute `ttl`) removes settled items instead of the retention job",
} as const satisfies Partial<Record<keyof WorkerSettings, string>>;

/** Props of the DynamoDB store only. */
const DYNAMODB_ONLY = [
  'maxWriteUnitsPerSecond',
  'transactItemsPerMessage',
  'itemSizeKb',
  'recordLatencyMs',
  'transactionConflictRatePercent',
  'domainKeyPrefixes',
] as const satisfies readonly (keyof WorkerSettings)[];

/** PITR keeps 1 to 35 days. */
const MAX_RECOVERY_DAYS = 35;

/**
 * The props with the defaults of the chosen store: with `store: 'dynamodb'` the retention job is off unless set
 * (setting it is refused by {@link checkStoreSettings}: TTL does its work); its outbox relay (on the table's stream),
 * health job (a bounded Scan) and breaker (a GetItem probe) are on by default, as PostgreSQL's are.
 *
 * @internal
 */
export function withStoreDefaults<P extends Omit<WorkerSettings, 'vpc'>>(props: P): P {
  if (props.store !== 'dynamodb') return props;
  return { retention: false, ...props };
}

/**
 * Checks the store choice against the other props, adding one problem per prop that belongs to the other store
 * (each naming its value and the fix). `vpc` is checked here too: the PostgreSQL store needs one, the DynamoDB
 * worker function runs outside a VPC (no NAT, no endpoints, no network interfaces), and the poller's tasks
 * (`runtime: 'fargate'`) run in one with either store.
 *
 * @internal
 */
export function checkStoreSettings(
  props: Omit<WorkerSettings, 'vpc'> & { readonly vpc?: unknown },
  problems: string[],
  options: { readonly checkVpc: boolean },
): WorkerStore {
  const store = props.store ?? 'postgres';
  if (store !== 'postgres' && store !== 'dynamodb') {
    problems.push(`store ("${String(store)}") must be "postgres" or "dynamodb"; set one of them`);
    return 'postgres';
  }
  if (store === 'postgres') {
    if (options.checkVpc && props.vpc === undefined) {
      problems.push(
        'vpc is required with store "postgres" (the database, the proxy and the functions run in it); pass a vpc (WorkerNetwork builds one) or set store "dynamodb"',
      );
    }
    for (const key of DYNAMODB_ONLY) {
      if (props[key] !== undefined) {
        problems.push(
          `${key} (${show(props[key])}) applies only to store "dynamodb" (given store "postgres"); remove ${key} or set store "dynamodb"`,
        );
      }
    }
    return store;
  }
  // The Lambda worker runs outside a VPC; a Fargate task cannot: its tasks run in the vpc's subnets and reach
  // DynamoDB, SQS, S3, ECR and CloudWatch Logs through the network's endpoints (WorkerNetwork).
  const fargate = props.runtime === 'fargate';
  if (options.checkVpc && fargate && props.vpc === undefined) {
    problems.push(
      'vpc is required with runtime "fargate" (the poller\'s tasks run in it, with store "dynamodb" too); pass a vpc whose subnets reach DynamoDB, SQS, S3, ECR and CloudWatch Logs (WorkerNetwork builds one: store "dynamodb", containerEndpoints true), or use runtime "lambda"',
    );
  }
  if (options.checkVpc && !fargate && props.vpc !== undefined) {
    problems.push(
      'vpc is given with store "dynamodb", whose worker runs outside a VPC (DynamoDB, SQS and S3 are reached over their public endpoints with IAM); remove vpc',
    );
  }
  for (const key of POSTGRES_ONLY) {
    // The poller's tasks run in the vpc's subnets whatever the store.
    if (key === 'vpcSubnets' && fargate) continue;
    if (props[key] !== undefined) {
      problems.push(
        `${key} (${show(props[key])}) applies only to store "postgres" (given store "dynamodb"); remove ${key}`,
      );
    }
  }
  for (const [key, reason] of Object.entries(POSTGRES_FUNCTIONS) as [
    keyof typeof POSTGRES_FUNCTIONS,
    string,
  ][]) {
    if (props[key] === true) {
      problems.push(`${key} (true) needs store "postgres": ${reason}; remove ${key} or set it false`);
    }
  }
  checkDomainKeyPrefixes(props, problems);
  // The engine refuses it at every cold start (createBatchEngine); refused here, before anything is deployed.
  if (props.commitMode === 'per-batch') {
    problems.push(
      'commitMode ("per-batch") is a PostgreSQL mode (one transaction per batch, a savepoint per record); with store "dynamodb" every record commits in its own TransactWriteItems: remove commitMode or set it "per-message"',
    );
  }
  if (props.backupRetention !== undefined && !props.backupRetention.isUnresolved()) {
    const days = props.backupRetention.toHours({ integral: false }) / 24;
    if (!Number.isInteger(days) || days < 1 || days > MAX_RECOVERY_DAYS) {
      problems.push(
        `backupRetention (${props.backupRetention.toHumanString()}) is the table's point-in-time recovery window with store "dynamodb": whole days from 1 to ${MAX_RECOVERY_DAYS}; set a value in that range`,
      );
    }
  }
  return store;
}

/**
 * The DynamoDB capacity result for the props, or `undefined` (and `tokens` true) when an input is a deploy-time
 * token. A RangeError of the formula becomes a problem.
 *
 * @internal
 */
export function dynamoDbCapacity(
  props: Omit<WorkerSettings, 'vpc'>,
  recordConcurrency: number,
  problems: string[],
): { readonly capacity: DynamoDbCapacityResult | undefined; readonly tokens: boolean } {
  const inputs = {
    maxWriteUnitsPerSecond: props.maxWriteUnitsPerSecond,
    transactItemsPerMessage: props.transactItemsPerMessage,
    itemSizeKb: props.itemSizeKb,
    recordLatencyMs: props.recordLatencyMs,
    recordConcurrency,
    downstreamRateLimit: props.downstreamRateLimit,
    callsPerMessage: props.callsPerMessage,
    lockContentionSafeParallelism: props.lockContentionSafeParallelism,
  };
  if (Object.values(inputs).some((value) => value !== undefined && Token.isUnresolved(value))) {
    return { capacity: undefined, tokens: true };
  }
  try {
    return { capacity: safeDynamoDbConcurrency(inputs), tokens: false };
  } catch (error) {
    problems.push(`${(error as Error).message}; fix the capacity props`);
    return { capacity: undefined, tokens: false };
  }
}

/**
 * The domain prefixes of a DynamoDB worker's grant: given, or the example domain's when the worker runs the example
 * handlers; a worker of your own (`workerEntry`) must name its own, or its handlers' writes would be refused in AWS.
 * Each must be a plain prefix (no IAM wildcard) clear of the toolkit's reserved prefixes: `"I"` would let the worker
 * delete inbox items.
 */
function checkDomainKeyPrefixes(props: Omit<WorkerSettings, 'vpc'>, problems: string[]): void {
  const prefixes = props.domainKeyPrefixes;
  if (prefixes === undefined) {
    if (props.workerEntry !== undefined) {
      problems.push(
        `workerEntry ("${props.workerEntry}") runs your own handlers with store "dynamodb": set domainKeyPrefixes to the partition key prefixes they write (for example ["ORDER#"]; [] if they write no item), or the worker's role refuses their writes`,
      );
    }
    return;
  }
  if (Token.isUnresolved(prefixes)) return;
  for (const prefix of prefixes) {
    if (Token.isUnresolved(prefix)) continue;
    if (typeof prefix !== 'string' || prefix.length === 0 || /[*?]/.test(prefix)) {
      problems.push(
        `domainKeyPrefixes entry ${JSON.stringify(prefix)} must be a non-empty prefix without * or ? (IAM wildcards); give the start of your partition keys, such as "ORDER#"`,
      );
      continue;
    }
    const reserved = RESERVED_KEY_PREFIXES.find((own) => own.startsWith(prefix) || prefix.startsWith(own));
    if (reserved) {
      problems.push(
        `domainKeyPrefixes entry "${prefix}" overlaps the toolkit's own items (${reserved}…): the worker could overwrite or delete them; give a prefix of your domain's own, such as "ORDER#"`,
      );
    }
  }
}

/** A prop's value for a message: numbers and strings as given, durations in words. */
function show(value: unknown): string {
  if (value instanceof Duration) return value.isUnresolved() ? 'a token' : value.toHumanString();
  if (typeof value === 'string') return `"${value}"`;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return 'given';
}
