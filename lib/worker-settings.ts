// One interface, one documented field per setting (about a hundred): the single reference the typed axes pick from.
import type { Duration } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import type * as rds from 'aws-cdk-lib/aws-rds';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type { CommitMode, TerminalPolicy } from '../lambda/types.ts';
import type { RetryPolicyEntry } from './resolve-retry-policy.ts';
import type { FargateRuntimeSettings } from './runtimes/fargate/fargate-settings.ts';
import type { WorkerStore } from './stores/worker-store.ts';

/**
 * What makes CloudFormation replace the source queue and the DLQ: their type and their logical ids (the
 * worker gives them no fixed name, so CloudFormation derives the names from the logical ids).
 */
export interface QueueIdentity {
  /** The queues are FIFO queues. */
  readonly fifo: boolean;
  /** Logical id of the source queue in the template, for example `WorkerQueue9380F652`. */
  readonly queueLogicalId: string;
  /** Logical id of the DLQ in the template, for example `WorkerDeadLetterQueue2879C389`. */
  readonly deadLetterQueueLogicalId: string;
}

/**
 * Every setting of the worker, flat: the shape of a `cdk.json` stage (with durations as `Duration`), where each
 * setting is documented once. {@link SqsDatabaseWorkerProps} groups the same settings by axis (store, runtime);
 * the construct flattens them back to this shape (`flattenWorkerProps`), which the checks of
 * `resolveWorkerSettings` read. Every setting is optional except `vpc` with the PostgreSQL store; the defaults
 * give a safe production worker. Ranges are checked at synth time: an unsafe combination fails `cdk synth` with
 * one message per problem.
 */
export interface WorkerSettings extends FargateRuntimeSettings {
  // ── store ────────────────────────────────────────────────────────────────────────────────────────────────
  /**
   * Where the inbox and the domain state live (`WORKER_STORE`). `postgres`: RDS PostgreSQL behind RDS Proxy in
   * `vpc`, migrations on deploy, the outbox relay, the health and retention jobs and the breaker. `dynamodb`: one
   * on-demand DynamoDB table (`DYNAMODB_TABLE`; TTL on `ttl`, point-in-time recovery, retained in production),
   * the worker outside any VPC, and none of the PostgreSQL resources or functions; props of the PostgreSQL store
   * are refused with it. Capacity comes from the write budget (`maxWriteUnitsPerSecond`) instead of connections.
   * @default 'postgres'
   */
  readonly store?: WorkerStore;
  /**
   * Write units per second the worker may spend on the DynamoDB table (`store: 'dynamodb'` only): the budget the
   * safe concurrency is derived from (see `safeDynamoDbConcurrency`). A new on-demand table serves 4,000 before
   * it has scaled; an account's tables 40,000 each by default (a service quota).
   * @default 4000
   */
  readonly maxWriteUnitsPerSecond?: number;
  /**
   * Items one message's TransactWriteItems holds: its domain items plus the inbox completion, 1 to 100
   * (`store: 'dynamodb'` only). Each costs 2 write units per KB; the gate put 1 more.
   * @default 2
   */
  readonly transactItemsPerMessage?: number;
  /** Size of the largest item the worker writes, in KB, up to 400 (`store: 'dynamodb'` only). @default 1 */
  readonly itemSizeKb?: number;
  /**
   * Expected time of one record, gate to commit, in milliseconds (`store: 'dynamodb'` only); lower is the safe
   * side. Compare with the dashboard's DynamoDB latency graph.
   * @default 15
   */
  readonly recordLatencyMs?: number;
  /**
   * DynamoDB transaction conflicts in percent of received records (5 minutes) above which the alarm fires,
   * above 0 to 100 (`store: 'dynamodb'` only).
   * @default 5
   */
  readonly transactionConflictRatePercent?: number;
  /**
   * Partition key prefixes of the domain items your handlers write and read (`store: 'dynamodb'` only), such as
   * `['ORDER#', 'CUSTOMER#']`: the worker's role may put, update, delete, condition-check, get and query items whose
   * partition key starts with one of them, and nothing else of the table besides its own inbox (`IDEMP#`) and
   * quarantine (`QUARANTINE#`) items; never the ops commands' audit items (`AUDIT#`), never a delete of an inbox
   * item. A prefix may not overlap those reserved ones, nor hold `*` or `?`. `[]`: the handlers write no item.
   * With `workerEntry` (your own handlers) it is required.
   * @default the example domain's prefixes, `['CASE#', 'LEDGER#', 'ACCOUNT#', 'DOCUMENT#']` (EXAMPLE_DOMAIN_KEY_PREFIXES)
   */
  readonly domainKeyPrefixes?: readonly string[];

  // ── network ──────────────────────────────────────────────────────────────────────────────────────────────
  /**
   * VPC of the database, the proxy and the functions. It must have an SQS and a Secrets Manager endpoint.
   * Required with `store: 'postgres'`; refused with `store: 'dynamodb'` (that worker runs outside a VPC).
   */
  readonly vpc?: ec2.IVpc;
  /**
   * Subnets of the database, the proxy and the functions.
   * @default { subnetType: ec2.SubnetType.PRIVATE_ISOLATED }
   */
  readonly vpcSubnets?: ec2.SubnetSelection;

  // ── queue ────────────────────────────────────────────────────────────────────────────────────────────────
  /**
   * Use a FIFO source queue and a FIFO DLQ (content-based deduplication off: producers set the deduplication id).
   * @default false
   */
  readonly fifo?: boolean;
  /**
   * The identity of the deployed source queue and DLQ of a production worker: a deploy that would replace
   * them (another `fifo`, another logical id) fails the synth unless `acknowledgeQueueReplacement` is set
   * (see `checkQueueIdentity`). Record the value the synth error names; cdk.json stages set it as
   * `"queueIdentity": {"fifo": false, "queueLogicalId": "…", "deadLetterQueueLogicalId": "…"}`.
   * Not checked when `production` is false (those queues are deleted with the stack anyway).
   * @default none: a production worker fails the synth with the value to record
   */
  readonly queueIdentity?: QueueIdentity;
  /**
   * Lets this deploy replace the retained source queue and DLQ of a production worker, after they were
   * drained. Set it for the one deploy that replaces them, then record the new `queueIdentity` and remove it:
   * left set while nothing is replaced, it fails the synth.
   * @default false
   */
  readonly acknowledgeQueueReplacement?: boolean;
  /**
   * Visibility timeout of the source queue. At least 6 × `timeout` + `maxBatchingWindow` (AWS's advice for
   * Lambda event sources), at most 12 hours. With `runtime: 'fargate'`, at least `pollerVisibility`.
   * @default 6 × timeout + maxBatchingWindow (180 s with the defaults); with `runtime: 'fargate'`, pollerVisibility
   */
  readonly visibilityTimeout?: Duration;
  /**
   * Message retention of the source queue, 60 s to 14 days.
   * @default Duration.days(4)
   */
  readonly retentionPeriod?: Duration;
  /**
   * Message retention of the DLQ, 60 s to 14 days, and longer than `retentionPeriod` (a message keeps its
   * original enqueue time when it moves to the DLQ).
   * @default Duration.days(14)
   */
  readonly dlqRetentionPeriod?: Duration;
  /**
   * Receives before SQS moves a message to the DLQ, 5 to 1000. Backoff and deadline deferrals are receives too.
   * @default 10
   */
  readonly maxReceiveCount?: number;
  /**
   * Largest message the queues accept, 1024 to 1048576 bytes. The outbox accepts envelopes up to 1 MiB by
   * default (`enqueueOutbox` `maxMessageBytes`): keep the two equal.
   * @default 1048576 (1 MiB, the SQS maximum)
   */
  readonly maxMessageSizeBytes?: number;

  // ── payloads by reference (payloadRef) ───────────────────────────────────────────────────────────────────
  /**
   * Create the payload bucket (`payloadBucket`): versioned, S3-managed encryption, TLS-only, public access
   * blocked, access-logged. The worker may read object versions from it (s3:GetObject, s3:GetObjectVersion on
   * its objects, nothing else); producers get s3:PutObject with `grantPayloadWrite`.
   * @default true
   */
  readonly payloadBucket?: boolean;
  /**
   * How long the payload bucket keeps an object: a current object expires this long after it was written, and a
   * version that is no longer current is deleted this long after that. Whole days, at least retentionPeriod +
   * dlqRetentionPeriod: a message (or its DLQ copy) must never outlive the object version it refers to.
   * @default retentionPeriod + dlqRetentionPeriod, rounded up to whole days (18 days with the defaults)
   */
  readonly payloadVersionRetention?: Duration;
  /**
   * Largest `payloadRef` object the worker reads (`PAYLOAD_MAX_BYTES`), 1 byte to 1 GiB, and at most what the
   * memory holds: `memorySize` (`taskMemoryMiB` with runtime "fargate") ≥ 64 MiB + 11 × records in flight × the limit
   * (a JSON payload's measured peak cost per byte; records in flight: `recordConcurrency`, or `batchSize` with
   * commitMode per-batch on Lambda). A larger value fails synth, naming the fixes (docs/large-payloads.md).
   * @default 64 MiB, or the most the memory holds when that is less (40 MiB for the default function)
   */
  readonly maxPayloadBytes?: number;

  // ── worker function ──────────────────────────────────────────────────────────────────────────────────────
  /**
   * Entry file of the worker function: your module that exports `handler` (typically
   * `export const handler = createWorkerFromConfig({ handlers })` from `sqs-inbox-worker/postgres`, or
   * `createDynamoWorkerFromConfig` from `sqs-inbox-worker/dynamodb` with `store: 'dynamodb'`), absolute or relative
   * to the folder `cdk` runs in (the folder of `cdk.json`). Bundled with its imports by the local esbuild like the
   * shipped worker; a path that is not a file fails synth. In `cdk.json`, the stage setting `workerEntry`.
   * With `runtime: 'fargate'` the same module runs in the poller: its `handlers` export (next to `handler`) is
   * bundled at synth with the poller's main into the task's image, in place of the example domain
   * (docs/poller.md, "Your own handlers on Fargate").
   * @default the store's shipped entry (the example domain): `<project>/lambda/handlers/worker.ts` for PostgreSQL,
   * `<project>/lambda/handlers/worker-dynamodb.ts` for DynamoDB
   */
  readonly workerEntry?: string;
  /**
   * Timeout of the worker function, 1 s to 15 minutes.
   * @default Duration.seconds(30)
   */
  readonly timeout?: Duration;
  /**
   * Memory of the worker function, 128 to 10240 MB.
   * @default 512
   */
  readonly memorySize?: number;
  /**
   * Inbox namespace of this worker (`WORKER_CONSUMER`), 1 to 100 characters.
   * @default 'case-worker'
   */
  readonly consumer?: string;
  /**
   * `POWERTOOLS_SERVICE_NAME`: the value of the `service` dimension of every metric.
   * @default 'sqs-inbox-worker'
   */
  readonly serviceName?: string;
  /**
   * `POWERTOOLS_METRICS_NAMESPACE`: CloudWatch namespace of the worker's and the relay's EMF metrics.
   * @default 'SqsInboxWorker'
   */
  readonly metricsNamespace?: string;
  /**
   * Database connections of one worker environment (`DB_POOL_SIZE`), 1 to 100: one function environment, or one
   * Fargate task.
   * @default 1; with `runtime: 'fargate'`, 10 (a whole receive batch in flight at once)
   */
  readonly dbPoolSize?: number;
  /**
   * Records one invocation processes at once (`WORKER_RECORD_CONCURRENCY`), 1 to `dbPoolSize` (1 to 10 with
   * `store: 'dynamodb'`, where it multiplies the writes per second of one worker); with `runtime: 'fargate'`, the
   * records one task has in flight (`POLLER_CONCURRENCY` as well). With `commitMode: 'per-batch'` a batch's records
   * run one after another in its one transaction: a function takes only 1, and a Fargate task runs up to
   * `dbPoolSize` whole batches at once (`POLLER_CONCURRENCY` up to `dbPoolSize` × `batchSize`,
   * `WORKER_RECORD_CONCURRENCY` 1).
   * @default dbPoolSize (1 with `store: 'dynamodb'`; per batch 1, or `dbPoolSize` × `batchSize` on Fargate)
   */
  readonly recordConcurrency?: number;
  /**
   * What happens to a terminal message (`WORKER_TERMINAL_POLICY`): stored in `worker_quarantine` and
   * acknowledged, or reported as failed so SQS moves it to the DLQ.
   * @default 'quarantine'
   */
  readonly terminalPolicy?: TerminalPolicy;
  /**
   * `WORKER_COMMIT_MODE`: one transaction per message, or one per batch with a savepoint per record. `per-batch` is
   * PostgreSQL's only: refused with `store: 'dynamodb'`, whose records each commit in their own TransactWriteItems.
   * @default 'per-message'
   */
  readonly commitMode?: CommitMode;
  /**
   * Retry policies by failure code (`WORKER_RETRY_POLICY`): a retryable failure of a listed code backs off on its own
   * curve, `random(0, min(max, base × 2^(receiveCount − 1)))`, and with `maxAttempts` turns terminal after its own
   * number of attempts; other codes keep the worker's backoff. A code must be one of `FAILURE_CODES`,
   * `POSTGRES_<sqlstate>` or `handlerFailureCodes`; `base` and `max` whole seconds, 0 ≤ base ≤ max ≤ 42,300;
   * `maxAttempts` 1 to `maxReceiveCount`. Checked at synth with the worker's own rules (docs/operations.md "Retry
   * policy per failure code").
   * @example { THROTTLED: { base: Duration.seconds(5), max: Duration.minutes(5) }, PARTNER_RATE_LIMITED: { base: Duration.seconds(30), max: Duration.hours(1), maxAttempts: 8 } }
   * @default {} (every code on the worker's backoff)
   */
  readonly retryPolicy?: Readonly<Record<string, RetryPolicyEntry>>;
  /**
   * Your handlers' own failure codes (`RetryableError`'s `code`) that `retryPolicy` may name
   * (`WORKER_HANDLER_FAILURE_CODES`): a code listed in neither is refused as a typo.
   * @default []
   */
  readonly handlerFailureCodes?: readonly string[];
  /**
   * Extra environment variables of the worker (for example `WORKER_BACKOFF_MAX_SECONDS`).
   * @default {}
   */
  readonly workerEnvironment?: Readonly<Record<string, string>>;
  /**
   * X-Ray active tracing of the worker and the outbox relay (`Tracing.ACTIVE`, with the role's X-Ray write
   * permissions), and `POWERTOOLS_TRACE_ENABLED=true` on the worker: a subsegment per record, linked to the
   * producer's trace. With `runtime: 'fargate'`: the X-Ray daemon as a sidecar of the poller's task (its image built
   * at deploy, an X-Ray endpoint in the stack's network, the daemon's X-Ray permissions on the task role) and a
   * segment per sampled record. Off, the worker never loads the tracer (docs/tracing.md); the producer's trace id is
   * on the worker's log lines and inbox rows either way. In `cdk.json`, the stage setting `tracing`.
   * @default false
   */
  readonly tracing?: boolean;

  // ── event source mapping ─────────────────────────────────────────────────────────────────────────────────
  /**
   * Records per invocation: 1 to 10 for FIFO, 1 to 10000 otherwise (above 10 needs `maxBatchingWindow` ≥ 1 s).
   * With `runtime: 'fargate'`, messages per receive (`POLLER_BATCH_SIZE`), 1 to 10.
   * @default 10
   */
  readonly batchSize?: number;
  /**
   * How long the poller gathers records before invoking, 0 to 300 s.
   * @default Duration.seconds(0)
   */
  readonly maxBatchingWindow?: Duration;
  /**
   * How the event source mapping scales. `maximum-concurrency`: Lambda's pollers on demand, capped by
   * `MaximumConcurrency` (`maxConcurrency`). `provisioned`: `ProvisionedPollerConfig` with `minimumPollers`
   * always on (billed as event poller units even when the queue is empty; see docs/deploy.md) and up to
   * `maximumPollers`, each driving up to 10 concurrent invokes; the reserved concurrency is the hard cap. The
   * pollers are derived from the capacity formula; a safe worker concurrency below 20 (2 pollers × 10) is
   * refused at synth.
   * @default 'maximum-concurrency'
   */
  readonly scalingMode?: 'maximum-concurrency' | 'provisioned';
  /**
   * Provisioned pollers kept running at all times (`scalingMode: 'provisioned'` only), 2 to 200, at most
   * `maximumPollers`.
   * @default 2
   */
  readonly minimumPollers?: number;
  /**
   * Most provisioned pollers (`scalingMode: 'provisioned'` only), 2 to 2000; × 10 at most the safe worker
   * concurrency and at most `reservedConcurrency`.
   * @default ⌊safe worker concurrency / 10⌋, capped at 2000
   */
  readonly maximumPollers?: number;
  /**
   * Event source mapping `MaximumConcurrency` (`scalingMode: 'maximum-concurrency'` only), 2 to 1000, at most `reservedConcurrency` and at most the safe
   * worker concurrency of the capacity formula.
   * @default the safe worker concurrency (capacity formula), capped at 1000
   */
  readonly maxConcurrency?: number;
  /**
   * Reserved concurrency of the worker function, a whole number from 2 to 100000, at least `maxConcurrency`.
   * With `scalingMode: 'provisioned'` it is the only cap on the database: at most the safe worker
   * concurrency and at least `maximumPollers` × 10.
   * @default maxConcurrency (none when `reserveConcurrency` is false); with `scalingMode: 'provisioned'`, `maximumPollers` × 10
   */
  readonly reservedConcurrency?: number;
  /**
   * Whether the worker (`reservedConcurrency`) and the outbox relay (1) get reserved concurrency. Lambda refuses a
   * reservation that leaves fewer than 100 unreserved executions in the account and region, so a new account —
   * whose concurrency quota may start as low as 10 — cannot deploy any. `false` deploys there: the event source
   * `maxConcurrency` still bounds the worker (and so the database), but other functions of the account can
   * take the capacity it would need. Keep `true` in production.
   * @default true
   */
  readonly reserveConcurrency?: boolean;

  // ── capacity (pattern document §10) ──────────────────────────────────────────────────────────────────────
  /**
   * `max_connections` of the database, 10 to 5000 (RDS default: LEAST(DBInstanceClassMemory / 9531392, 5000)).
   * @default 80 (a db.t4g.micro)
   */
  readonly dbMaxConnections?: number;
  /**
   * Connections kept for everything but the worker (admins, migrations, the outbox relay, secret rotation),
   * 0 to `dbMaxConnections` − 1. `db_available_connections` = `dbMaxConnections` − this.
   * @default 10
   */
  readonly dbReservedConnections?: number;
  /** Write IOPS budget of the worker (with `writeIopsPerMessage`). @default no IOPS term */
  readonly dbWriteIopsBudget?: number;
  /** Write IOPS one worker's message throughput costs (with `dbWriteIopsBudget`). @default no IOPS term */
  readonly writeIopsPerMessage?: number;
  /** Calls per second a downstream allows (with `callsPerMessage`). @default no downstream term */
  readonly downstreamRateLimit?: number;
  /** Downstream calls per second of one worker (with `downstreamRateLimit`). @default no downstream term */
  readonly callsPerMessage?: number;
  /** Parallelism above which lock contention on hot aggregates hurts. @default no lock term */
  readonly lockContentionSafeParallelism?: number;
  /**
   * `statement_timeout` of the worker's and the relay's database roles (`DB_STATEMENT_TIMEOUT_MS` of the migration
   * function, which sets it with `alter role … in database … set`), whole milliseconds from 1 ms to 15 min. Nothing
   * on the message path sets a timeout itself: `SET` and `set_config` pin connections to RDS Proxy.
   * @default Duration.seconds(15)
   */
  readonly dbStatementTimeout?: Duration;
  /**
   * `lock_timeout` of the same roles (`DB_LOCK_TIMEOUT_MS`): how long a statement waits for a row held elsewhere
   * before failing retryably, whole milliseconds from 1 ms to 10 min, at most `dbStatementTimeout`.
   * @default Duration.seconds(5)
   */
  readonly dbLockTimeout?: Duration;
  /**
   * `MaxConnectionsPercent` of the proxy, 1 to 100.
   * @default ⌈100 × (maxConcurrency × dbPoolSize + 3) / dbMaxConnections⌉ (the worker plus the relay, the migration and the breaker's probe; + 2 without the breaker)
   */
  readonly proxyMaxConnectionsPercent?: number;

  // ── database ─────────────────────────────────────────────────────────────────────────────────────────────
  /**
   * Production defaults: multi-AZ, deletion protection, 14 days of backups, a final snapshot of the database
   * when it is removed or replaced, and the source queue and DLQ retained (with their messages) when they are
   * removed or replaced. Otherwise the database and the queues are deleted with the stack. With
   * `store: 'dynamodb'`: the table retained (with its items) and deletion-protected.
   * @default true
   */
  readonly production?: boolean;
  /** Instance class of the database. @default r6g.large in production, t4g.micro otherwise */
  readonly instanceType?: ec2.InstanceType;
  /** PostgreSQL engine version. @default PostgresEngineVersion.VER_17 */
  readonly postgresVersion?: rds.PostgresEngineVersion;
  /** Standby in a second AZ. @default production */
  readonly multiAz?: boolean;
  /** Deletion protection of the instance (of the table with `store: 'dynamodb'`). @default production */
  readonly deletionProtection?: boolean;
  /**
   * Automated backup retention, 1 to 35 days; with `store: 'dynamodb'` the table's point-in-time recovery window
   * (whole days). @default 14 days in production, 1 day otherwise
   */
  readonly backupRetention?: Duration;
  /** Allocated storage, 20 to 65536 GiB (storage autoscaling up to 4×). @default 20 */
  readonly allocatedStorageGiB?: number;
  /** Database name. @default 'worker' */
  readonly databaseName?: string;
  /**
   * Database user of the worker function (IAM-authenticated through the proxy): inbox, quarantine, effect log,
   * domain tables and new outbox rows only. A lowercase SQL identifier, distinct from the other two users.
   * @default 'sqs_worker'
   */
  readonly workerDbUser?: string;
  /**
   * Database user of the outbox relay (IAM-authenticated through the proxy): reads and updates outbox rows only.
   * @default 'sqs_outbox_relay'
   */
  readonly relayDbUser?: string;
  /**
   * Database user for the `sqs-worker` ops commands (inbox purge and rearm, quarantine release, audit trail).
   * Registered with the proxy but granted to no function: give operators `rds-db:connect` with
   * `database.grantOpsConnect(role)`.
   * @default 'sqs_worker_ops'
   */
  readonly opsDbUser?: string;
  /**
   * Database user of the scheduled health job (IAM-authenticated through the proxy): reads the status and
   * timestamp columns of the inbox, quarantine and outbox (never a payload) and, as a member of `pg_monitor`,
   * the lock and activity views. Writes nothing.
   * @default 'sqs_worker_health'
   */
  readonly healthDbUser?: string;
  /**
   * Database user of the scheduled retention job (IAM-authenticated through the proxy): deletes settled rows of
   * the toolkit's tables, reads their key, status and timestamp columns only.
   * @default 'sqs_worker_retention'
   */
  readonly retentionDbUser?: string;
  /** Rotation interval of the master secret, 1 to 365 days. @default Duration.days(30) */
  readonly secretRotationInterval?: Duration;

  // ── migrations ───────────────────────────────────────────────────────────────────────────────────────────
  /** Folder of the forward-only migrations copied into the migration function. @default `<project>/migrations` */
  readonly migrationsDirectory?: string;

  // ── outbox relay ─────────────────────────────────────────────────────────────────────────────────────────
  /** Deploy the scheduled outbox relay. @default true */
  readonly outboxRelay?: boolean;
  /**
   * Entry file of the outbox relay handler, absolute or relative to the folder `cdk` runs in; must be a file.
   * @default `<project>/lambda/handlers/outbox-relay.ts`
   */
  readonly outboxRelayEntry?: string;
  /** Schedule of the relay, 1 minute to 1 hour. @default Duration.minutes(1) */
  readonly outboxRelaySchedule?: Duration;
  /** Bounded run time of one relay invocation, shorter than the schedule. @default Duration.seconds(50) */
  readonly outboxRelayMaxRun?: Duration;

  // ── health job ───────────────────────────────────────────────────────────────────────────────────────────
  /**
   * Deploy the scheduled health job (`lambda/handlers/health.ts`): database figures as EMF metrics, and the
   * alarms on them (open quarantine age, in-flight age, lock waits, deadlocks, the job not running).
   * @default true
   */
  readonly healthCheck?: boolean;
  /** Entry file of the health job handler. @default `<project>/lambda/handlers/health.ts` */
  readonly healthCheckEntry?: string;
  /** Schedule of the health job, whole minutes from 1 minute to 1 hour. @default Duration.minutes(1) */
  readonly healthCheckSchedule?: Duration;

  // ── retention job ────────────────────────────────────────────────────────────────────────────────────────
  /**
   * Deploy the scheduled retention job (`lambda/handlers/retention.ts`): purges settled rows in batches under a
   * time budget, publishes `RetentionRowsRemoved`.
   * @default true
   */
  readonly retention?: boolean;
  /** Schedule of the retention job, whole minutes from 5 minutes to 1 day. @default Duration.hours(1) */
  readonly retentionSchedule?: Duration;
  /** Time budget of one retention run, 10 s to 14 minutes and shorter than the schedule. @default Duration.minutes(4) */
  readonly retentionMaxRun?: Duration;
  /**
   * COMPLETED inbox rows finished and last seen longer ago than this are purged. At least `retentionPeriod` +
   * `dlqRetentionPeriod`: a copy of a message can arrive that late, and only its inbox row makes it a duplicate.
   * @default retentionPeriod + dlqRetentionPeriod + 1 day (19 days with the defaults)
   */
  readonly inboxRetention?: Duration;
  /** PUBLISHED outbox rows published longer ago than this are purged, 1 day to 10 years. @default Duration.days(7) */
  readonly outboxRetention?: Duration;
  /**
   * Settled external-effect-log rows (COMPLETED, FAILED_TERMINAL) not referenced by a domain row and last updated
   * longer ago than this are purged; at least `retentionPeriod` + `dlqRetentionPeriod` like the inbox.
   * @default inboxRetention
   */
  readonly effectLogRetention?: Duration;
  /** Released quarantine entries released longer ago than this are purged, 1 day to 10 years. @default Duration.days(30) */
  readonly quarantineRetention?: Duration;
  // ── circuit breaker of the event source mapping ──────────────────────────────────────────────────────────────
  /**
   * Deploy the breaker: a scheduled function that probes the database as the worker reaches it and disables the
   * event source mapping while it is unavailable (so receive counts stop growing and good messages stay out of
   * the DLQ), then enables it half-open and restores its scaling. Needs a Lambda interface endpoint in the VPC
   * (the stack's `WorkerNetwork` has one).
   * @default true
   */
  readonly breaker?: boolean;
  /**
   * Time between two checks of the breaker, 1 to 30 s (each scheduled run checks for 50 s).
   * @default Duration.seconds(10)
   */
  readonly breakerCheckInterval?: Duration;
  /** Failed probes in a row that open the breaker, 1 to 100. @default 2 */
  readonly breakerFailureThreshold?: number;
  /** Shortest time the breaker stays open before its first probe, 10 s to 1 hour. @default Duration.seconds(60) */
  readonly breakerMinOpen?: Duration;
  /** Time half-open (good probes at a low concurrency) before the scaling is restored, 0 s to 1 hour. @default Duration.seconds(60) */
  readonly breakerHalfOpen?: Duration;
  /**
   * `MaximumConcurrency` while half-open (mode `maximum-concurrency`), 2 to `maxConcurrency`. Provisioned
   * mappings run 2 pollers while half-open.
   * @default 2
   */
  readonly breakerHalfOpenConcurrency?: number;

  // ── adaptive concurrency ─────────────────────────────────────────────────────────────────────────────────────
  /**
   * Let the limit of records in flight follow the database's signals of load (docs/operations.md, "Adaptive
   * concurrency"). Runtime `lambda`: the breaker's control loop moves the event source mapping's
   * `MaximumConcurrency` between `concurrencyFloor` and `maxConcurrency` (`CONCURRENCY_*` of the breaker, its
   * `cloudwatch:GetMetricData`, the `ConcurrencyAtFloor` alarm); it needs the breaker and `scalingMode:
   * 'maximum-concurrency'`, so `true` is refused with `breaker: false` or `scalingMode: 'provisioned'`. Runtime
   * `fargate`: the poller's own limit between `concurrencyFloor` and `recordConcurrency`
   * (`POLLER_ADAPTIVE_CONCURRENCY`). `false` keeps the limit at its ceiling: the breaker still deploys, without
   * the loop.
   * @default true (where a loop can run)
   */
  readonly adaptiveConcurrency?: boolean;
  /**
   * The lowest the adaptive limit goes. Runtime `lambda`: the `MaximumConcurrency` the breaker's control loop sets
   * at least (`CONCURRENCY_FLOOR`), 2 to 1000 (AWS's range) and at most `maxConcurrency`; the `ConcurrencyAtFloor`
   * alarm watches it. Runtime `fargate`: the records in flight of one task at least (`POLLER_CONCURRENCY_FLOOR`), 1
   * to `recordConcurrency`. Refused with `adaptiveConcurrency: false` and where no loop runs (see there).
   * @default 2 (runtime `lambda`); 1 (runtime `fargate`)
   */
  readonly concurrencyFloor?: number;

  // ── alarms and dashboard ─────────────────────────────────────────────────────────────────────────────────
  /**
   * `'none'` says on purpose that nobody reads this stage's alarms (a dev stage): the alarms and the topic are
   * still created, with no subscription. Without it, the synth fails unless `alarmEmail` or `alarmTopic` is
   * given, so a stage cannot be deployed with alarms nobody receives by accident.
   * @default undefined: `alarmEmail` or `alarmTopic` required
   */
  readonly alarms?: 'none';
  /**
   * Topic that receives every alarm. A topic of your own must let `cloudwatch.amazonaws.com` publish to it (and
   * use its KMS key, when encrypted with a customer managed key); nothing is added to it here.
   * @default a new KMS-encrypted, TLS-only topic whose policy lets CloudWatch alarms of this account publish
   */
  readonly alarmTopic?: sns.ITopic;
  /**
   * E-mail address subscribed to the alarm topic (confirm the subscription e-mail after the first deploy). An
   * address at a reserved example domain (`example.com`, `*.example`, …) is a placeholder and warns at synth.
   * @default no subscription
   */
  readonly alarmEmail?: string;
  /** Age of the oldest source message above which the SLO alarm fires. @default Duration.minutes(5) */
  readonly oldestMessageAgeSlo?: Duration;
  /** Age of the oldest pending outbox row above which the relay alarm fires. @default Duration.minutes(5) */
  readonly outboxPendingAgeSlo?: Duration;
  /** Terminal failures in percent of processed records (5 minutes) that fire the alarm, 0 to 100. @default 1 */
  readonly terminalFailureRatePercent?: number;
  /**
   * Retryable failures in percent of received records (`RetryableFailure` / `BatchSize`, 5-minute periods) above
   * which the retry-rate alarm fires, above 0 to 100. @default 10
   */
  readonly retryRatePercent?: number;
  /** Consecutive 5-minute periods the retry rate must stay above `retryRatePercent`, 1 to 288. @default 3 */
  readonly retryRateEvaluationPeriods?: number;
  /**
   * Duplicates in percent of received records in one 5-minute period above which the duplicate-spike alarm fires
   * (a producer resending, a redrive loop, a visibility timeout shorter than processing), above 0 to 100.
   * @default 20
   */
  readonly duplicateRatePercent?: number;
  /**
   * Age of the oldest open (unreleased) quarantine entry above which the quarantine alarm fires, 1 minute to
   * 7 days (needs the health job). @default Duration.minutes(15)
   */
  readonly quarantineAgeAlarm?: Duration;
  /** Percent of a connection limit at which the connection alarms fire, 1 to 100. @default 80 */
  readonly connectionsAlarmPercent?: number;
  /** Name of the CloudWatch dashboard. @default generated by CloudFormation */
  readonly dashboardName?: string;
}
