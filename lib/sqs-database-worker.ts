import { join, resolve } from 'node:path';
import { Annotations, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as rds from 'aws-cdk-lib/aws-rds';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as triggers from 'aws-cdk-lib/triggers';
import { Construct } from 'constructs';
import { WORKER_DEFAULTS } from '../lambda/constants.ts';
import { bundledFunction, PROJECT_ROOT } from './bundled-function.ts';
import { checkQueueIdentity } from './check-queue-identity.ts';
import { createWorkerAlarms, workerMetric } from './observability/worker-alarms.ts';
import { createWorkerDashboard } from './observability/worker-dashboard.ts';
import { WORKER_METRICS } from './observability/worker-metrics.ts';
import {
  auxiliaryProxyConnections,
  type ResolvedWorkerSettings,
  resolveWorkerSettings,
} from './resolve-worker-settings.ts';
import { PollerService } from './runtimes/fargate/poller-service.ts';
import type { PollerSettings } from './runtimes/fargate/resolve-poller-settings.ts';
import { shippedWorkerEntry } from './shipped-worker-entry.ts';
import type { SqsDatabaseWorkerProps } from './sqs-database-worker-props.ts';
import { DYNAMODB_CAPACITY_DEFAULTS } from './stores/dynamodb/dynamodb-capacity.ts';
import { EXAMPLE_DOMAIN_KEY_PREFIXES, WorkerTable } from './stores/dynamodb/worker-table.ts';
import { WorkerDatabase } from './stores/postgres/worker-database.ts';
import { withStoreDefaults } from './stores/worker-store.ts';

export type { SqsDatabaseWorkerProps } from './sqs-database-worker-props.ts';

const POSTGRES_PORT = 5432;
const RELAY_RUN_GUARD = Duration.seconds(10);
/** The health job's run: seven bounded statements (5 s each at most) and a connect (5 s); far below a minute. */
const HEALTH_TIMEOUT = Duration.seconds(30);
/** Time the retention job keeps back from its timeout: no batch starts later (run time = timeout − guard). */
const RETENTION_RUN_GUARD = Duration.seconds(10);
/** E-mail domains reserved for examples (RFC 2606, RFC 6761): a placeholder address, nobody reads it. */
const PLACEHOLDER_EMAIL = /@(?:[^@]+\.)?(?:example\.(?:com|net|org)|example|invalid|test|localhost)$/i;
/** The breaker runs every minute for its timeout less this guard. */
const BREAKER_TIMEOUT = Duration.seconds(55);
const BREAKER_RUN_GUARD = Duration.seconds(5);
/** Amazon's CA certificates (RDS CAs included) in the Lambda Node.js runtime, for `NODE_EXTRA_CA_CERTS`. */
const LAMBDA_RUNTIME_CA_BUNDLE = '/var/runtime/ca-cert.pem';

/**
 * A production SQS → Lambda → PostgreSQL worker: source queue and DLQ, RDS PostgreSQL with a rotated master
 * secret behind an IAM-authenticated RDS Proxy, the worker function and its SQS event source, migrations
 * applied on deploy, the scheduled outbox relay, alarms to an SNS topic and a dashboard. With
 * `store: 'dynamodb'`: one on-demand DynamoDB table ({@link WorkerTable}) instead of the database, the worker
 * outside any VPC, capacity from the table's write budget, and no PostgreSQL resources or scheduled functions.
 *
 * Every prop is checked before anything is created (`resolveWorkerSettings`); an unsafe combination throws one
 * error listing every problem. The event source `maxConcurrency`, the reserved concurrency and the proxy's
 * `maxConnectionsPercent` default to what the database can carry (the capacity formula); an info annotation
 * names the binding constraint. A production worker keeps its queues and a final database snapshot when they
 * are removed or replaced, and refuses at synth a change that would replace its queues unless acknowledged
 * (`queueIdentity`, `acknowledgeQueueReplacement`).
 *
 * `runtime: 'fargate'` runs the worker as the long-running poller on ECS Fargate ({@link PollerService})
 * instead of the function and its event source mapping (and the mapping's breaker). It is a choice on this
 * construct rather than a construct of its own because everything else — queues, database, proxy, migrations,
 * relay, scheduled jobs, capacity formula, alarms, dashboard — is the same worker whichever runtime consumes
 * the queue: a second construct would have to repeat all of it, and a stage switches runtime with one setting.
 * The capacity formula bounds the tasks as it bounds the concurrency (a task holds `dbPoolSize` connections).
 *
 * @example
 * ```ts
 * const worker = new SqsDatabaseWorker(stack, 'Worker', {
 *   vpc,
 *   dbMaxConnections: 400,
 *   alarmEmail: 'oncall@invoices.example.org',
 *   production: true,
 *   queueIdentity: {
 *     fifo: false,
 *     queueLogicalId: 'WorkerQueue9380F652',
 *     deadLetterQueueLogicalId: 'WorkerDeadLetterQueue2879C389',
 *   },
 * });
 * worker.queue.grantSendMessages(producerRole);
 * ```
 */
export class SqsDatabaseWorker extends Construct {
  /** The settings after defaults and capacity derivation. */
  readonly settings: ResolvedWorkerSettings;
  /** Source queue. */
  readonly queue: sqs.Queue;
  /** Dead-letter queue of the source queue. */
  readonly deadLetterQueue: sqs.Queue;
  /** The worker function (runtime `lambda`). */
  readonly workerFunction: lambda.Function | undefined;
  /** The SQS event source of the worker (runtime `lambda`). */
  readonly eventSource: SqsEventSource | undefined;
  /** The poller's ECS Fargate service, its task role and scaling (runtime `fargate`). */
  readonly pollerService: PollerService | undefined;
  /** Database, master secret and proxy (`store: 'postgres'`). */
  readonly database: WorkerDatabase | undefined;
  /** The DynamoDB table of the inbox and the domain state (`store: 'dynamodb'`). */
  readonly table: WorkerTable | undefined;
  /** The function that applies migrations on deploy, and its trigger (`store: 'postgres'`). */
  readonly migrationFunction: lambda.Function | undefined;
  readonly migrationTrigger: triggers.Trigger | undefined;
  /** The scheduled outbox relay (when `outboxRelay` is not false). */
  readonly outboxRelayFunction: lambda.Function | undefined;
  /** The scheduled health job (when `healthCheck` is not false). */
  readonly healthFunction: lambda.Function | undefined;
  /** The scheduled retention job (when `retention` is not false). */
  readonly retentionFunction: lambda.Function | undefined;
  /** The versioned bucket of `payloadRef` payloads (when `payloadBucket` is not false). */
  readonly payloadBucket: s3.Bucket | undefined;
  /** The scheduled circuit breaker of the event source mapping (when `breaker` is not false). */
  readonly breakerFunction: lambda.Function | undefined;
  /** Topic that receives every alarm. */
  readonly alarmTopic: sns.ITopic;
  /** The alarms by name (DlqNotEmpty, OldestMessageAge, FunctionErrors, …). */
  readonly alarms: Readonly<Record<string, cloudwatch.Alarm>>;
  /** The CloudWatch dashboard. */
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, givenProps: SqsDatabaseWorkerProps) {
    // Validate everything before creating anything.
    const settings = resolveWorkerSettings(givenProps, { checkVpc: true });
    super(scope, id);
    this.settings = settings;
    // With DynamoDB: no relay, health job, retention job or breaker (they need PostgreSQL).
    const props = withStoreDefaults(givenProps);

    const production = props.production ?? true;
    const vpcSubnets = props.vpcSubnets ?? { subnetType: ec2.SubnetType.PRIVATE_ISOLATED };
    const serviceName = props.serviceName ?? 'sqs-inbox-worker';
    const metricsNamespace = props.metricsNamespace ?? WORKER_METRICS.defaultNamespace;
    const { dbUsers } = settings;
    const databaseName = props.databaseName ?? 'worker';
    const capacityNote = settings.capacity
      ? settings.capacity.explanation
      : 'capacity not computed (a capacity input is a deploy-time token)';
    const pollers = settings.provisionedPollers;
    const tasks = settings.poller;
    const scalingNote = tasks
      ? `Fargate tasks ${tasks.minTasks}–${tasks.maxTasks}${props.maxTasks === undefined ? ' (derived)' : ''} of ${settings.store === 'dynamodb' ? `${settings.recordConcurrency} records` : `${settings.dbPoolSize} connections`} each (${tasks.minTasks} always on)`
      : pollers
        ? `provisioned pollers ${pollers.minimumPollers}–${pollers.maximumPollers}${props.maximumPollers === undefined ? ' (derived)' : ''} (${pollers.minimumPollers} always on)`
        : `maxConcurrency ${settings.maxConcurrency}${props.maxConcurrency === undefined ? ' (derived)' : ''}`;
    const reservedNote = tasks
      ? ''
      : `, reservedConcurrency ${settings.reservedConcurrency ?? 'none (reserveConcurrency false)'}`;
    const storeNote =
      settings.store === 'dynamodb'
        ? `store dynamodb (on-demand table, ${tasks ? "the poller's tasks in the vpc" : 'no VPC'})`
        : `proxy maxConnectionsPercent ${settings.proxyMaxConnectionsPercent} of dbMaxConnections ${settings.dbMaxConnections}`;
    Annotations.of(this).addInfo(`${capacityNote}; ${scalingNote}${reservedNote}, ${storeNote}`);
    if (!settings.reserveConcurrency && tasks) {
      const jobs = [props.outboxRelay ?? true, props.healthCheck ?? true, settings.retention].filter(Boolean);
      Annotations.of(this).addWarningV2(
        'sqs-inbox-worker:no-reserved-concurrency',
        `reserveConcurrency is false: the outbox relay and the scheduled jobs reserve no concurrency, so other functions of the account can throttle them; set reserveConcurrency true once the account's concurrency quota leaves 100 unreserved executions after ${jobs.length}`,
      );
    } else if (!settings.reserveConcurrency) {
      Annotations.of(this).addWarningV2(
        'sqs-inbox-worker:no-reserved-concurrency',
        `reserveConcurrency is false: the worker${(props.outboxRelay ?? true) ? ' and the outbox relay' : ''} reserve no concurrency, so other functions of the account can take what the worker needs (maxConcurrency ${settings.maxConcurrency} still bounds it); set reserveConcurrency true once the account's concurrency quota leaves 100 unreserved executions after ${settings.maxConcurrency + 1}`,
      );
    }

    // ── queues ──────────────────────────────────────────────────────────────────────────────────────────────
    // In production the queues outlive the stack and a replacement: what they hold (above all the DLQ, whose
    // messages are incidents nobody has looked at yet) must not go with a `cdk destroy` or a replaced queue.
    const queueCommon = {
      removalPolicy: production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
      fifo: settings.fifo ? true : undefined,
      contentBasedDeduplication: settings.fifo ? false : undefined,
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      maxMessageSizeBytes: settings.maxMessageSizeBytes,
    };
    this.deadLetterQueue = new sqs.Queue(this, 'DeadLetterQueue', {
      ...queueCommon,
      retentionPeriod: settings.dlqRetentionPeriod,
    });
    Validations.of(this.deadLetterQueue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason: 'This queue IS the dead-letter queue of the source queue; it needs no DLQ of its own.',
    });
    this.queue = new sqs.Queue(this, 'Queue', {
      ...queueCommon,
      retentionPeriod: settings.retentionPeriod,
      visibilityTimeout: settings.visibilityTimeout,
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: settings.maxReceiveCount },
    });
    if (production) this.guardQueueIdentity(props);

    // ── store: PostgreSQL (database, proxy, migrations) or one DynamoDB table ───────────────────────────────────
    const database =
      settings.store === 'postgres' && props.vpc
        ? new WorkerDatabase(this, 'Database', {
            vpc: props.vpc,
            vpcSubnets,
            production,
            instanceType:
              props.instanceType ??
              (production
                ? ec2.InstanceType.of(ec2.InstanceClass.R6G, ec2.InstanceSize.LARGE)
                : ec2.InstanceType.of(ec2.InstanceClass.T4G, ec2.InstanceSize.MICRO)),
            postgresVersion: props.postgresVersion ?? rds.PostgresEngineVersion.VER_17,
            multiAz: props.multiAz ?? production,
            deletionProtection: props.deletionProtection ?? production,
            backupRetention: props.backupRetention ?? Duration.days(production ? 14 : 1),
            allocatedStorageGiB: props.allocatedStorageGiB ?? 20,
            databaseName,
            dbUsers,
            secretRotationInterval: props.secretRotationInterval ?? Duration.days(30),
            proxyMaxConnectionsPercent: settings.proxyMaxConnectionsPercent,
          })
        : undefined;
    this.database = database;
    this.table =
      settings.store === 'dynamodb'
        ? new WorkerTable(this, 'Table', {
            production,
            deletionProtection: props.deletionProtection ?? production,
            recoveryPeriod: props.backupRetention ?? Duration.days(production ? 14 : 1),
          })
        : undefined;
    const proxyDbEnvironment = {
      ...(database && {
        DB_HOST: database.proxy.endpoint,
        DB_PORT: String(POSTGRES_PORT),
        DB_NAME: databaseName,
        DB_AUTH: 'iam',
        DB_SSL: 'true',
      }),
      POWERTOOLS_SERVICE_NAME: serviceName,
      POWERTOOLS_METRICS_NAMESPACE: metricsNamespace,
    };

    // ── migrations on deploy ────────────────────────────────────────────────────────────────────────────────
    if (database) {
      const migrationsDirectory = props.migrationsDirectory ?? join(PROJECT_ROOT, 'migrations');
      const migrationFunction = bundledFunction(this, 'MigrationFunction', {
        entry: join(PROJECT_ROOT, 'lambda/handlers/migrate.ts'),
        description:
          'Applies pending migrations and provisions the database roles of the worker, the relay and the ops commands (runs on every deploy)',
        vpc: props.vpc,
        vpcSubnets,
        timeout: Duration.minutes(5),
        environment: {
          DB_HOST: database.instance.dbInstanceEndpointAddress,
          DB_PORT: database.instance.dbInstanceEndpointPort,
          DB_NAME: databaseName,
          DB_SECRET_ARN: database.masterSecret.secretArn,
          DB_SSL: 'true',
          // The instance's certificate is issued by the RDS CA, which Node does not trust by default; the Lambda
          // Node.js runtime ships Amazon's CAs (RDS included) in this file. The worker and the relay connect
          // through the proxy, whose ACM certificate Node's default CAs already verify (and skip this cold-start
          // cost). A container image would copy the RDS bundle in and point this variable at it instead.
          NODE_EXTRA_CA_CERTS: LAMBDA_RUNTIME_CA_BUNDLE,
          // One database user per function, each with its own privileges (lambda/postgres/provision-roles.ts).
          WORKER_DB_USER: dbUsers.worker,
          ...((props.outboxRelay ?? true) ? { RELAY_DB_USER: dbUsers.relay } : {}),
          OPS_DB_USER: dbUsers.ops,
          // The worker's and the relay's statement and lock timeouts, set as their roles' defaults: nothing on the
          // message path sets them (SET and set_config pin connections to RDS Proxy).
          DB_STATEMENT_TIMEOUT_MS: String(settings.dbStatementTimeoutMs),
          DB_LOCK_TIMEOUT_MS: String(settings.dbLockTimeoutMs),
          ...((props.healthCheck ?? true) ? { HEALTH_DB_USER: dbUsers.health } : {}),
          ...(settings.retention ? { RETENTION_DB_USER: dbUsers.retention } : {}),
          MIGRATIONS_DIR: 'migrations',
        },
        // The migration files travel with the code: <bundle>/migrations/NNNNN_name.sql.
        files: [{ from: migrationsDirectory, into: 'migrations', suffix: '.sql' }],
      });
      database.masterSecret.grantRead(migrationFunction);
      database.instance.connections.allowDefaultPortFrom(migrationFunction, 'migrations to PostgreSQL');
      this.migrationFunction = migrationFunction;
    }

    // ── payload bucket (payloadRef) ─────────────────────────────────────────────────────────────────────────
    this.payloadBucket = (props.payloadBucket ?? true) ? this.createPayloadBucket(production) : undefined;

    // ── worker ──────────────────────────────────────────────────────────────────────────────────────────────
    if (settings.poller && props.vpc) {
      // (resolveWorkerSettings refuses runtime "fargate" without a vpc, whatever the store.)
      this.pollerService = this.createPollerService(props, settings.poller, database, proxyDbEnvironment, {
        vpc: props.vpc,
        subnets: vpcSubnets,
      });
      this.workerFunction = undefined;
      this.eventSource = undefined;
    } else {
      this.pollerService = undefined;
      const workerFunction = bundledFunction(this, 'WorkerFunction', {
        // One entry per store (lib/shipped-worker-entry.ts): neither bundle holds the other store's code.
        entry: resolve(props.workerEntry ?? shippedWorkerEntry(database ? 'postgres' : 'dynamodb')),
        description: database
          ? 'SQS → PostgreSQL inbox worker'
          : 'SQS → DynamoDB inbox worker (outside a VPC)',
        vpc: database ? props.vpc : undefined,
        vpcSubnets: database ? vpcSubnets : undefined,
        timeout: settings.timeout,
        memorySize: settings.memorySize,
        reservedConcurrentExecutions: settings.reservedConcurrency,
        ...(props.tracing ? { tracing: lambda.Tracing.ACTIVE } : {}),
        profile: { store: database ? 'postgres' : 'dynamodb', tracing: props.tracing ?? false },
        environment: {
          ...proxyDbEnvironment,
          ...(database && { DB_USER: dbUsers.worker, DB_POOL_SIZE: String(settings.dbPoolSize) }),
          ...(this.table && {
            WORKER_STORE: 'dynamodb',
            DYNAMODB_TABLE: this.table.table.tableName,
            // The inbox items' TTL: a completed item outlives every copy of its message in the queue and the DLQ.
            RETENTION_SOURCE_SECONDS: String(settings.retentionPeriod.toSeconds()),
            RETENTION_DLQ_SECONDS: String(settings.dlqRetentionPeriod.toSeconds()),
          }),
          WORKER_CONSUMER: props.consumer ?? WORKER_DEFAULTS.consumer,
          WORKER_RECORD_CONCURRENCY: String(settings.recordConcurrency),
          WORKER_TERMINAL_POLICY: props.terminalPolicy ?? WORKER_DEFAULTS.terminalPolicy,
          WORKER_COMMIT_MODE: props.commitMode ?? WORKER_DEFAULTS.commitMode,
          // Declared empty (= unset for lambda/config.ts) so `sam local invoke --env-vars` can point the worker at
          // a local PostgreSQL and SQS: SAM only overrides variables the template declares.
          ...(database && { DATABASE_URL: '' }),
          SQS_ENDPOINT: '',
          S3_ENDPOINT: '',
          PAYLOAD_MAX_BYTES: String(settings.maxPayloadBytes),
          // Read by lambda/config.ts (subsegments per record) and by Powertools Tracer itself.
          ...(props.tracing ? { POWERTOOLS_TRACE_ENABLED: 'true' } : {}),
          ...props.workerEnvironment,
        },
      });
      database?.grantWorkerConnect(workerFunction);
      this.table?.grantWorker(workerFunction, props.domainKeyPrefixes ?? EXAMPLE_DOMAIN_KEY_PREFIXES);
      if (props.tracing) this.acknowledgeTracingWildcard(workerFunction);
      if (this.payloadBucket) {
        for (const statement of this.payloadReadStatements()) workerFunction.addToRolePolicy(statement);
        this.acknowledgeObjectWildcard(workerFunction.role, 'the worker reads any payload object');
      }
      const eventSource = new SqsEventSource(this.queue, {
        batchSize: settings.batchSize,
        maxBatchingWindow: settings.fifo ? undefined : settings.maxBatchingWindow,
        reportBatchItemFailures: true,
        // MaximumConcurrency and ProvisionedPollerConfig are mutually exclusive; a provisioned worker is capped by
        // its reserved concurrency (resolveWorkerSettings keeps it within the capacity formula).
        ...(settings.provisionedPollers
          ? { provisionedPollerConfig: { ...settings.provisionedPollers } }
          : { maxConcurrency: settings.maxConcurrency }),
        // EventCount metrics (polled, invoked, failed, deleted, …) in both modes, on the dashboard.
        metricsConfig: { metrics: [lambda.MetricType.EVENT_COUNT] },
      });
      workerFunction.addEventSource(eventSource);
      this.workerFunction = workerFunction;
      this.eventSource = eventSource;
    }

    this.migrationTrigger =
      database && this.migrationFunction
        ? new triggers.Trigger(this, 'MigrationTrigger', {
            handler: this.migrationFunction,
            timeout: Duration.minutes(5),
            executeOnHandlerChange: true,
            executeAfter: [database.instance],
            // The worker (function or poller service) and the relay start only after the schema exists.
            executeBefore: [this.workerFunction ?? (this.pollerService as PollerService).service],
          })
        : undefined;

    // ── outbox relay ────────────────────────────────────────────────────────────────────────────────────────
    if (database && (props.outboxRelay ?? true)) {
      const schedule = props.outboxRelaySchedule ?? Duration.minutes(1);
      const maxRun = props.outboxRelayMaxRun ?? Duration.seconds(50);
      const relay = bundledFunction(this, 'OutboxRelayFunction', {
        entry: resolve(props.outboxRelayEntry ?? join(PROJECT_ROOT, 'lambda/handlers/outbox-relay.ts')),
        description: 'Publishes pending outbox rows to the source queue (scheduled, bounded run time)',
        vpc: props.vpc,
        vpcSubnets,
        timeout: maxRun.plus(RELAY_RUN_GUARD),
        // One relay at a time: the lease makes more safe, but one is enough and keeps connections bounded.
        reservedConcurrentExecutions: settings.reserveConcurrency ? 1 : undefined,
        // The relay's invocations in X-Ray; the messages carry their producers' traces, not the relay's.
        ...(props.tracing ? { tracing: lambda.Tracing.ACTIVE } : {}),
        environment: {
          ...proxyDbEnvironment,
          DB_USER: dbUsers.relay,
          DB_POOL_SIZE: '1',
          OUTBOX_QUEUE_URL: this.queue.queueUrl,
          // The relay starts no round with less than this left: run time = timeout − guard = outboxRelayMaxRun.
          OUTBOX_RUN_GUARD_MS: String(RELAY_RUN_GUARD.toMilliseconds()),
        },
      });
      // A run that could not start in time is dropped; the next schedule picks the rows up.
      relay.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: schedule });
      database.grantRelayConnect(relay);
      if (props.tracing) this.acknowledgeTracingWildcard(relay);
      this.queue.grantSendMessages(relay);
      new events.Rule(this, 'OutboxRelaySchedule', {
        description: 'Runs the outbox relay',
        schedule: events.Schedule.rate(schedule),
        targets: [new targets.LambdaFunction(relay, { retryAttempts: 0 })],
      });
      this.migrationTrigger?.executeBefore(relay);
      this.outboxRelayFunction = relay;
    }

    // ── health job ──────────────────────────────────────────────────────────────────────────────────────────
    const healthSchedule = props.healthCheckSchedule ?? Duration.minutes(1);
    if (database && (props.healthCheck ?? true)) {
      const health = bundledFunction(this, 'HealthFunction', {
        entry: props.healthCheckEntry ?? join(PROJECT_ROOT, 'lambda/handlers/health.ts'),
        description:
          'Publishes database health figures (quarantine, in-flight, outbox, locks, deadlocks) as metrics (scheduled, read-only)',
        vpc: props.vpc,
        vpcSubnets,
        timeout: HEALTH_TIMEOUT,
        // One check at a time: it keeps the deadlock counter of the previous run in its module scope.
        reservedConcurrentExecutions: settings.reserveConcurrency ? 1 : undefined,
        environment: {
          ...proxyDbEnvironment,
          DB_USER: dbUsers.health,
          DB_POOL_SIZE: '1',
          WORKER_CONSUMER: props.consumer ?? 'case-worker',
          HEALTH_STATEMENT_TIMEOUT_MS: '5000',
        },
      });
      // A check that could not start in time is dropped; the next schedule runs a fresh one.
      health.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: healthSchedule });
      database.grantHealthConnect(health);
      new events.Rule(this, 'HealthSchedule', {
        description: 'Runs the health job',
        schedule: events.Schedule.rate(healthSchedule),
        targets: [new targets.LambdaFunction(health, { retryAttempts: 0 })],
      });
      this.migrationTrigger?.executeBefore(health);
      this.healthFunction = health;
    }

    // ── retention job ───────────────────────────────────────────────────────────────────────────────────────
    if (database && settings.retention) {
      const windows = settings.retention;
      const retention = bundledFunction(this, 'RetentionFunction', {
        entry: join(PROJECT_ROOT, 'lambda/handlers/retention.ts'),
        description:
          'Purges settled inbox, outbox, effect-log and released quarantine rows in batches (scheduled, bounded run time)',
        vpc: props.vpc,
        vpcSubnets,
        timeout: windows.maxRun.plus(RETENTION_RUN_GUARD),
        // One purge at a time: two would only compete for the same rows (skip locked keeps them apart).
        reservedConcurrentExecutions: settings.reserveConcurrency ? 1 : undefined,
        environment: {
          ...proxyDbEnvironment,
          DB_USER: dbUsers.retention,
          DB_POOL_SIZE: '1',
          WORKER_CONSUMER: props.consumer ?? 'case-worker',
          // The guard: the function refuses an inbox window shorter than these, as the synth does.
          RETENTION_SOURCE_SECONDS: String(settings.retentionPeriod.toSeconds()),
          RETENTION_DLQ_SECONDS: String(settings.dlqRetentionPeriod.toSeconds()),
          RETENTION_INBOX_SECONDS: String(windows.inbox.toSeconds()),
          RETENTION_OUTBOX_SECONDS: String(windows.outbox.toSeconds()),
          RETENTION_EFFECT_LOG_SECONDS: String(windows.effectLog.toSeconds()),
          RETENTION_QUARANTINE_SECONDS: String(windows.quarantine.toSeconds()),
          RETENTION_RUN_GUARD_MS: String(RETENTION_RUN_GUARD.toMilliseconds()),
        },
      });
      retention.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(5) });
      database.grantRetentionConnect(retention);
      new events.Rule(this, 'RetentionSchedule', {
        description: 'Runs the retention job',
        schedule: events.Schedule.rate(windows.schedule),
        targets: [new targets.LambdaFunction(retention, { retryAttempts: 0 })],
      });
      this.migrationTrigger?.executeBefore(retention);
      this.retentionFunction = retention;
    }

    // ── circuit breaker of the event source mapping ──────────────────────────────────────────────────────────
    if (database && settings.breaker && this.eventSource) {
      const breaker = settings.breaker;
      const eventSource = this.eventSource;
      const pollers = settings.provisionedPollers;
      const breakerFn = bundledFunction(this, 'BreakerFunction', {
        entry: join(PROJECT_ROOT, 'lambda/handlers/breaker.ts'),
        description:
          'Disables the worker event source mapping while the database is unavailable and enables it again (scheduled)',
        vpc: props.vpc,
        vpcSubnets,
        timeout: BREAKER_TIMEOUT,
        // One environment carries the breaker's state from run to run; runs never overlap.
        reservedConcurrentExecutions: settings.reserveConcurrency ? 1 : undefined,
        environment: {
          ...proxyDbEnvironment,
          // The probe goes the worker's way: through the proxy, as the worker's database user (`select 1`).
          DB_USER: dbUsers.worker,
          DB_POOL_SIZE: '1',
          BREAKER_MAPPING_UUID: eventSource.eventSourceMappingId,
          BREAKER_SCALING_MODE: settings.scalingMode,
          ...(pollers
            ? {
                BREAKER_MINIMUM_POLLERS: String(pollers.minimumPollers),
                BREAKER_MAXIMUM_POLLERS: String(pollers.maximumPollers),
              }
            : { BREAKER_MAX_CONCURRENCY: String(settings.maxConcurrency) }),
          BREAKER_HALF_OPEN_CONCURRENCY: String(breaker.halfOpenConcurrency),
          BREAKER_FAILURE_THRESHOLD: String(breaker.failureThreshold),
          BREAKER_CHECK_INTERVAL_MS: String(breaker.checkInterval.toMilliseconds()),
          BREAKER_MIN_OPEN_MS: String(breaker.minOpen.toMilliseconds()),
          BREAKER_HALF_OPEN_MS: String(breaker.halfOpen.toMilliseconds()),
          BREAKER_RUN_GUARD_MS: String(BREAKER_RUN_GUARD.toMilliseconds()),
        },
      });
      breakerFn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(1) });
      database.grantWorkerConnect(breakerFn);
      // Least privilege: read, update and read the tags of this one mapping, nothing else of Lambda.
      breakerFn.addToRolePolicy(
        new iam.PolicyStatement({
          sid: 'ControlTheWorkerEventSourceMapping',
          actions: ['lambda:GetEventSourceMapping', 'lambda:UpdateEventSourceMapping', 'lambda:ListTags'],
          resources: [eventSource.eventSourceMappingArn],
        }),
      );
      new events.Rule(this, 'BreakerSchedule', {
        description: 'Runs the event source mapping breaker',
        schedule: events.Schedule.rate(Duration.minutes(1)),
        targets: [new targets.LambdaFunction(breakerFn, { retryAttempts: 0 })],
      });
      this.breakerFunction = breakerFn;
    }

    // ── alarms and dashboard ────────────────────────────────────────────────────────────────────────────────
    this.alarmTopic = props.alarmTopic ?? this.createAlarmTopic();
    if (props.alarmEmail) {
      this.alarmTopic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
      if (PLACEHOLDER_EMAIL.test(props.alarmEmail)) {
        Annotations.of(this).addWarningV2(
          'sqs-inbox-worker:placeholder-alarm-email',
          `alarmEmail (${props.alarmEmail}) is at a reserved example domain that receives no mail: set the on-call address before deploying, or nobody reads the alarms`,
        );
      }
    }
    const workerConnections = settings.maxConcurrency * settings.dbPoolSize;
    this.alarms = createWorkerAlarms(this, {
      topic: this.alarmTopic,
      queue: this.queue,
      deadLetterQueue: this.deadLetterQueue,
      workerFunction: this.workerFunction,
      pollerService: this.pollerService?.service,
      functionTimeout: settings.timeout,
      instance: database?.instance,
      proxy: database?.proxy,
      table: this.table?.table,
      transactionConflictRatePercent: props.transactionConflictRatePercent ?? 5,
      metricsNamespace,
      serviceName,
      oldestMessageAgeSlo: props.oldestMessageAgeSlo ?? Duration.minutes(5),
      outboxPendingAgeSlo: this.outboxRelayFunction
        ? (props.outboxPendingAgeSlo ?? Duration.minutes(5))
        : undefined,
      terminalFailureRatePercent: props.terminalFailureRatePercent ?? 1,
      retryRatePercent: props.retryRatePercent ?? 10,
      retryRateEvaluationPeriods: props.retryRateEvaluationPeriods ?? 3,
      duplicateRatePercent: props.duplicateRatePercent ?? 20,
      health: this.healthFunction
        ? {
            function: this.healthFunction,
            schedule: healthSchedule,
            quarantineAge: props.quarantineAgeAlarm ?? Duration.minutes(15),
            // Redelivered after the visibility timeout; a poller's heartbeat holds a record up to its last extension.
            visibilityTimeout: settings.poller
              ? settings.poller.visibility.plus(settings.poller.maxExtension)
              : settings.visibilityTimeout,
          }
        : undefined,
      retention:
        this.retentionFunction && settings.retention
          ? { function: this.retentionFunction, schedule: settings.retention.schedule }
          : undefined,
      connectionsAlarmPercent: props.connectionsAlarmPercent ?? 80,
      dbMaxConnections: settings.dbMaxConnections,
      proxyPoolConnections: Math.floor(
        (settings.proxyMaxConnectionsPercent * settings.dbMaxConnections) / 100,
      ),
      expectedClientConnections: workerConnections + auxiliaryProxyConnections(props),
    });
    if (this.breakerFunction) {
      const breakerOpened = new cloudwatch.Alarm(this, 'BreakerOpenedAlarm', {
        alarmDescription:
          'The breaker disabled the worker event source mapping: the database is unavailable to the worker. See docs/operations.md#circuit-breaker.',
        metric: workerMetric(metricsNamespace, serviceName, 'BreakerOpened'),
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      const notify = new cloudwatchActions.SnsAction(this.alarmTopic);
      breakerOpened.addAlarmAction(notify);
      breakerOpened.addOkAction(notify);
      this.alarms = { ...this.alarms, BreakerOpened: breakerOpened };
    }
    this.dashboard = createWorkerDashboard(this, {
      dashboardName: props.dashboardName,
      queue: this.queue,
      deadLetterQueue: this.deadLetterQueue,
      workerFunction: this.workerFunction,
      eventSourceMappingId: this.eventSource?.eventSourceMappingId,
      pollerService: this.pollerService?.service,
      instance: database?.instance,
      proxy: database?.proxy,
      table: this.table?.table,
      maxWriteUnitsPerSecond: this.table
        ? (props.maxWriteUnitsPerSecond ?? DYNAMODB_CAPACITY_DEFAULTS.maxWriteUnitsPerSecond)
        : undefined,
      metricsNamespace,
      serviceName,
      healthFunction: this.healthFunction,
      retentionFunction: this.retentionFunction,
      alarms: Object.values(this.alarms),
    });
  }

  /**
   * The poller on Fargate (runtime `fargate`): the worker's environment plus the poller's (`WORKER_QUEUE_URL`,
   * `POLLER_*`), reading payload objects like the worker function. With PostgreSQL it connects through the proxy as
   * the worker's database user from the worker's subnets; with DynamoDB it gets the worker function's table grants
   * exactly (`WorkerTable.grantWorker`, the same `domainKeyPrefixes`) and the table's variables, and nothing of RDS.
   * Its image is the project's `Dockerfile` (built at deploy).
   */
  private createPollerService(
    props: SqsDatabaseWorkerProps,
    poller: PollerSettings,
    database: WorkerDatabase | undefined,
    proxyDbEnvironment: Readonly<Record<string, string>>,
    network: { readonly vpc: ec2.IVpc; readonly subnets: ec2.SubnetSelection },
  ): PollerService {
    const { settings, table } = this;
    const service = new PollerService(this, 'Poller', {
      vpc: network.vpc,
      vpcSubnets: network.subnets,
      queue: this.queue,
      settings: poller,
      store: settings.store,
      imageDirectory: PROJECT_ROOT,
      // A segment per record, through the X-Ray daemon beside the poller (POWERTOOLS_TRACE_ENABLED is set with it).
      tracing: props.tracing ?? false,
      environment: {
        ...proxyDbEnvironment,
        // The IAM token is signed for the proxy's region, the SDK's calls go to the stack's (the Lambda runtime
        // sets this variable by itself).
        AWS_REGION: Stack.of(this).region,
        ...(database && {
          DB_USER: settings.dbUsers.worker,
          DB_POOL_SIZE: String(settings.dbPoolSize),
        }),
        ...(table && {
          WORKER_STORE: 'dynamodb',
          DYNAMODB_TABLE: table.table.tableName,
          // The inbox items' TTL: a completed item outlives every copy of its message in the queue and the DLQ.
          RETENTION_SOURCE_SECONDS: String(settings.retentionPeriod.toSeconds()),
          RETENTION_DLQ_SECONDS: String(settings.dlqRetentionPeriod.toSeconds()),
        }),
        WORKER_CONSUMER: props.consumer ?? WORKER_DEFAULTS.consumer,
        // Per batch, a batch's records run one after another (1); POLLER_CONCURRENCY counts the records in flight.
        WORKER_RECORD_CONCURRENCY:
          props.commitMode === 'per-batch' ? '1' : String(settings.recordConcurrency),
        WORKER_TERMINAL_POLICY: props.terminalPolicy ?? WORKER_DEFAULTS.terminalPolicy,
        WORKER_COMMIT_MODE: props.commitMode ?? WORKER_DEFAULTS.commitMode,
        PAYLOAD_MAX_BYTES: String(settings.maxPayloadBytes),
        WORKER_QUEUE_URL: this.queue.queueUrl,
        POLLER_CONCURRENCY: String(settings.recordConcurrency),
        POLLER_BATCH_SIZE: String(settings.batchSize),
        POLLER_WAIT_SECONDS: String(poller.waitTime.toSeconds()),
        POLLER_VISIBILITY_SECONDS: String(poller.visibility.toSeconds()),
        POLLER_STOP_TIMEOUT_SECONDS: String(poller.stopTimeout.toSeconds()),
        POLLER_MAX_EXTENSION_SECONDS: String(poller.maxExtension.toSeconds()),
        ...props.workerEnvironment,
      },
    });
    database?.grantWorkerConnect({
      grantPrincipal: service.taskRole,
      connections: service.service.connections,
    });
    table?.grantWorker(service.taskRole, props.domainKeyPrefixes ?? EXAMPLE_DOMAIN_KEY_PREFIXES);
    if (this.payloadBucket) {
      for (const statement of this.payloadReadStatements()) service.taskRole.addToPolicy(statement);
      this.acknowledgeObjectWildcard(service.taskRole, 'the poller reads any payload object');
    }
    return service;
  }

  /**
   * Lets `grantee` (a producer's role) write payloads to the payload bucket: s3:PutObject on its objects only
   * (no read, no delete, no listing). `enqueueOutbox` with `offload` and `offloadPayload` need nothing more.
   *
   * @throws Error when the worker was created with `payloadBucket: false`.
   */
  grantPayloadWrite(grantee: iam.IGrantable): iam.Grant {
    if (!this.payloadBucket) {
      throw new Error(
        'grantPayloadWrite needs the payload bucket, but this worker has payloadBucket: false; remove that prop or grant your own bucket',
      );
    }
    return iam.Grant.addToPrincipal({
      grantee,
      actions: ['s3:PutObject'],
      resourceArns: [this.payloadBucket.arnForObjects('*')],
    });
  }

  /**
   * The versioned payload bucket and its access-log bucket. Objects are content-addressed and never rewritten
   * in place; a message names the version it was sent with, and the lifecycle keeps every version at least as
   * long as the queue and the DLQ can hold a message that refers to it (`payloadVersionRetention`).
   */
  private createPayloadBucket(production: boolean): s3.Bucket {
    const removalPolicy = production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    const accessLogs = new s3.Bucket(this, 'PayloadAccessLogBucket', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      removalPolicy,
      lifecycleRules: [{ id: 'expire-access-logs', expiration: Duration.days(365) }],
    });
    Validations.of(accessLogs).acknowledge({
      id: 'AwsSolutions-S1',
      reason: 'This is the access-log bucket of the payload bucket; logging it into itself would loop.',
    });
    const retention = this.settings.payloadVersionRetention;
    return new s3.Bucket(this, 'PayloadBucket', {
      versioned: true,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: accessLogs,
      serverAccessLogsPrefix: 'payload-bucket/',
      removalPolicy,
      lifecycleRules: [
        {
          id: 'expire-payload-versions',
          expiration: retention,
          noncurrentVersionExpiration: retention,
          abortIncompleteMultipartUploadAfter: Duration.days(1),
        },
        { id: 'remove-expired-delete-markers', expiredObjectDeleteMarker: true },
      ],
    });
  }

  /** cdk-nag IAM5: the X-Ray writes that `Tracing.ACTIVE` grants a traced function's role. */
  private acknowledgeTracingWildcard(fn: lambda.IFunction): void {
    if (!fn.role) return;
    Validations.of(fn.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Active tracing (the tracing prop, off by default): CDK grants xray:PutTraceSegments and xray:PutTelemetryRecords, which support no resource-level permissions, so AWS requires Resource "*" for them. Acknowledged on traced functions only.',
    });
  }

  /**
   * What a reader of `payloadRef` objects (the worker function, the poller's task) may do on the payload bucket:
   * read its objects and their versions, and list the bucket. ListBucket is there for one answer: S3 tells a caller
   * that an object does not exist (404 `NoSuchKey`, terminal `PAYLOAD_NOT_FOUND`, quarantined) only when it may list
   * the bucket; without it the answer is 403 `AccessDenied` (`PAYLOAD_ACCESS_DENIED`, retried until the DLQ). The
   * keys it can list are content hashes; no write, no delete, no other bucket.
   */
  private payloadReadStatements(): iam.PolicyStatement[] {
    const bucket = this.payloadBucket as s3.IBucket;
    return [
      new iam.PolicyStatement({
        sid: 'ReadPayloadObjects',
        actions: ['s3:GetObject', 's3:GetObjectVersion'],
        resources: [bucket.arnForObjects('*')],
      }),
      new iam.PolicyStatement({
        sid: 'KnowMissingPayloads',
        actions: ['s3:ListBucket'],
        resources: [bucket.bucketArn],
      }),
    ];
  }

  /** cdk-nag IAM5: a grant on every object of the payload bucket (keys are content hashes, unknown up front). */
  private acknowledgeObjectWildcard(role: iam.IRole | undefined, what: string): void {
    if (!role || !this.payloadBucket) return;
    const bucketId = Stack.of(this).getLogicalId(this.payloadBucket.node.defaultChild as s3.CfnBucket);
    Validations.of(role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/*]`,
      reason: `Payload objects are named by their SHA-256, unknown at deploy time: ${what} of that one bucket (GetObject/GetObjectVersion only).`,
    });
  }

  /**
   * Registers {@link checkQueueIdentity} as a validation of this construct: it runs at synth, after the whole
   * app is built, so a logical id pinned later with `overrideLogicalId` counts. Its errors fail the synth; a
   * warning (an acknowledged replacement) becomes a warning annotation. Setting names in the messages follow
   * bin/app.ts: `stages.<stage>.queueIdentity` when the app has a `stage` context, else the prop name.
   */
  private guardQueueIdentity(props: SqsDatabaseWorkerProps): void {
    const stage: unknown = this.node.tryGetContext('stage');
    const logicalId = (queue: sqs.Queue): string =>
      Stack.of(this).resolve((queue.node.defaultChild as sqs.CfnQueue).logicalId) as string;
    this.node.addValidation({
      validate: () => {
        const { errors, warnings } = checkQueueIdentity({
          synthesized: {
            fifo: this.settings.fifo,
            queueLogicalId: logicalId(this.queue),
            deadLetterQueueLogicalId: logicalId(this.deadLetterQueue),
          },
          recorded: props.queueIdentity,
          acknowledged: props.acknowledgeQueueReplacement ?? false,
          stackName: Stack.of(this).stackName,
          settingName: (key) => (typeof stage === 'string' ? `stages.${stage}.${key}` : key),
        });
        for (const warning of warnings) {
          Annotations.of(this).addWarningV2('sqs-inbox-worker:queue-replacement', warning);
        }
        return [...errors];
      },
    });
  }

  /**
   * A KMS-encrypted, TLS-only topic CloudWatch may publish to. The AWS-managed SNS key does not let CloudWatch
   * use it, hence a key of our own. A topic policy replaces the default one (which lets the account publish),
   * so the policy must allow `cloudwatch.amazonaws.com` to publish itself, or every alarm fires into the void:
   * the alarm shows the action failed in its history, and nobody is notified. Both the topic statement and the
   * key statement carry `aws:SourceAccount` (this stack's account) so only alarms of this account can use them
   * (the confused-deputy guard AWS recommends for service principals).
   */
  private createAlarmTopic(): sns.Topic {
    const cloudWatch = new iam.ServicePrincipal('cloudwatch.amazonaws.com');
    const fromThisAccount = { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } };
    const key = new kms.Key(this, 'AlarmTopicKey', {
      description: 'Encrypts the worker alarm topic',
      enableKeyRotation: true,
    });
    key.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'AllowCloudWatchAlarmsToUseTheKey',
        principals: [cloudWatch],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: fromThisAccount,
      }),
    );
    const topic = new sns.Topic(this, 'AlarmTopic', {
      displayName: 'sqs-inbox-worker alarms',
      masterKey: key,
      enforceSSL: true,
    });
    topic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'AllowCloudWatchAlarmsToPublish',
        principals: [cloudWatch],
        actions: ['sns:Publish'],
        resources: [topic.topicArn],
        conditions: fromThisAccount,
      }),
    );
    return topic;
  }
}
