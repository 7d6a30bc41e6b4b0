import { Annotations, Duration, Stack } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import * as triggers from 'aws-cdk-lib/triggers';
import { Construct } from 'constructs';
import type { LogQueryName } from '../lambda/worker/log-queries.ts';
import { annotateCapacity } from './annotate-capacity.ts';
import { checkQueueIdentity } from './check-queue-identity.ts';
import { ScheduledJobs } from './jobs/scheduled-jobs.ts';
import { createWorkerLogQueries } from './observability/worker-log-queries.ts';
import { WORKER_METRICS } from './observability/worker-metrics.ts';
import { createWorkerObservability } from './observability/worker-observability.ts';
import { createPayloadBucket } from './payload-bucket.ts';
import { type ResolvedWorkerSettings, resolveWorkerSettings } from './resolve-worker-settings.ts';
import { createPollerRuntime } from './runtimes/fargate/poller-runtime.ts';
import type { PollerService } from './runtimes/fargate/poller-service.ts';
import { createLambdaRuntime } from './runtimes/lambda/lambda-runtime.ts';
import type { SqsDatabaseWorkerProps } from './sqs-database-worker-props.ts';
import { createDynamoBreaker } from './stores/dynamodb/dynamodb-breaker.ts';
import { createDynamoHealthJob } from './stores/dynamodb/dynamodb-health-job.ts';
import { createDynamoOutboxRelay, type DynamoOutboxRelay } from './stores/dynamodb/dynamodb-outbox-relay.ts';
import { createDynamoDbStore } from './stores/dynamodb/dynamodb-store.ts';
import type { WorkerTable } from './stores/dynamodb/worker-table.ts';
import { createPostgresStore } from './stores/postgres/postgres-store.ts';
import type { WorkerDatabase } from './stores/postgres/worker-database.ts';
import { withStoreDefaults } from './stores/worker-store.ts';
import type { WorkerStoreParts } from './stores/worker-store-parts.ts';
import { flattenWorkerProps } from './worker-axes.ts';
import { createWorkerQueues } from './worker-queues.ts';
import type { WorkerSettings } from './worker-settings.ts';

export type { SqsDatabaseWorkerProps } from './sqs-database-worker-props.ts';

/**
 * A production SQS worker with exactly-once effects: source queue and DLQ, the store (`store.kind`: RDS
 * PostgreSQL with a rotated master secret behind an IAM-authenticated RDS Proxy, migrations applied on deploy and
 * the scheduled jobs; or one on-demand DynamoDB table, {@link WorkerTable}), the runtime (`runtime.kind`: the
 * worker function and its SQS event source, or the long-running poller on ECS Fargate, {@link PollerService}),
 * the payload bucket, alarms to an SNS topic and a dashboard.
 *
 * The constructor is composition: the props are flattened and checked before anything is created
 * (`resolveWorkerSettings`: an unsafe combination throws one error listing every problem), then each part is
 * built by its own module — queues, store (`lib/stores/<kind>/`), payload bucket, runtime (`lib/runtimes/<kind>/`),
 * {@link ScheduledJobs}, alarms and dashboard (`lib/observability/`). The event source `maxConcurrency`, the
 * reserved concurrency, the poller's task count and the proxy's `maxConnectionsPercent` default to what the store
 * can carry (the capacity formula); an info annotation names the binding constraint. A production worker keeps its
 * queues and a final database snapshot when they are removed or replaced, and refuses at synth a change that
 * would replace its queues unless acknowledged (`queueIdentity`, `acknowledgeQueueReplacement`).
 *
 * @example
 * ```ts
 * const worker = new SqsDatabaseWorker(stack, 'Worker', {
 *   vpc,
 *   store: { kind: 'postgres', dbMaxConnections: 400 },
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
  /** The log group of the worker's lines: the worker function's, or the poller's (runtime `fargate`). */
  readonly workerLogGroup: logs.ILogGroup;
  /**
   * The runbook's Logs Insights queries saved on {@link SqsDatabaseWorker.workerLogGroup}, by name (by idempotency
   * key, by message id, by failure code, slowest, retries by aggregate, by messageType): docs/operations.md.
   */
  readonly logQueries: Readonly<Record<LogQueryName, logs.CfnQueryDefinition>>;
  /** The SQS event source of the worker (runtime `lambda`). */
  readonly eventSource: SqsEventSource | undefined;
  /** The poller's ECS Fargate service, its task role and scaling (runtime `fargate`). */
  readonly pollerService: PollerService | undefined;
  /** Database, master secret and proxy (store `postgres`). */
  readonly database: WorkerDatabase | undefined;
  /** The DynamoDB table of the inbox and the domain state (store `dynamodb`). */
  readonly table: WorkerTable | undefined;
  /** The function that applies migrations on deploy, and its trigger (store `postgres`). */
  readonly migrationFunction: lambda.Function | undefined;
  readonly migrationTrigger: triggers.Trigger | undefined;
  /** The scheduled jobs: relay, health, retention and breaker (store `postgres`). */
  readonly jobs: ScheduledJobs | undefined;
  /**
   * The outbox relay (when `outboxRelay` is not false): scheduled on PostgreSQL, triggered by the table's stream on
   * DynamoDB.
   */
  readonly outboxRelayFunction: lambda.Function | undefined;
  /** Where the DynamoDB stream relay's given-up records go (store `dynamodb`, with the relay). */
  readonly outboxRelayFailureQueue: sqs.Queue | undefined;
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
    const given = flattenWorkerProps(givenProps);
    const settings = resolveWorkerSettings(given, { checkVpc: true });
    super(scope, id);
    this.settings = settings;
    // With DynamoDB: no retention job (TTL does its work); the relay, the health job and the breaker are its own.
    const props = withStoreDefaults(given);
    const production = props.production ?? true;
    const subnets = props.vpcSubnets ?? { subnetType: ec2.SubnetType.PRIVATE_ISOLATED };
    const serviceName = props.serviceName ?? 'sqs-inbox-worker';
    const metricsNamespace = props.metricsNamespace ?? WORKER_METRICS.defaultNamespace;
    const serviceEnvironment = {
      POWERTOOLS_SERVICE_NAME: serviceName,
      POWERTOOLS_METRICS_NAMESPACE: metricsNamespace,
    };
    annotateCapacity(this, props, settings);

    const queues = createWorkerQueues(this, settings, production);
    this.queue = queues.queue;
    this.deadLetterQueue = queues.deadLetterQueue;
    if (production) this.guardQueueIdentity(props);

    const store = this.createStore(props, settings, production);
    this.database = store.database;
    this.table = store.table;
    this.migrationFunction = store.migrationFunction;
    this.payloadBucket =
      (props.payloadBucket ?? true)
        ? createPayloadBucket(this, settings.payloadVersionRetention, production)
        : undefined;

    const runtimeInputs = {
      props,
      settings,
      queue: this.queue,
      store,
      payloadBucket: this.payloadBucket,
      subnets,
      serviceEnvironment,
    };
    if (settings.poller) {
      const vpc = requireVpc(props);
      this.pollerService = createPollerRuntime(this, { ...runtimeInputs, poller: settings.poller, vpc });
    } else {
      const runtime = createLambdaRuntime(this, runtimeInputs);
      this.workerFunction = runtime.workerFunction;
      this.eventSource = runtime.eventSource;
    }
    this.workerLogGroup = this.pollerService?.logGroup ?? (this.workerFunction as lambda.Function).logGroup;
    this.logQueries = createWorkerLogQueries(this, [this.workerLogGroup]);

    this.migrationTrigger = this.createMigrationTrigger(store);

    this.jobs = store.database
      ? new ScheduledJobs(this, 'Jobs', {
          props,
          settings,
          database: store.database,
          vpc: requireVpc(props),
          subnets,
          environment: { ...store.connectionEnvironment, ...serviceEnvironment },
          queue: this.queue,
          eventSource: this.eventSource,
          migrationTrigger: this.migrationTrigger,
        })
      : undefined;
    // The DynamoDB store's own relay (on the table's stream) and health job.
    const dynamoOutboxRelay = this.createStreamRelay(props, store, serviceEnvironment, production);
    const dynamoHealth = this.createDynamoHealth(props, store, serviceEnvironment);
    this.outboxRelayFunction = this.jobs?.outboxRelayFunction ?? dynamoOutboxRelay?.relayFunction;
    this.outboxRelayFailureQueue = dynamoOutboxRelay?.failureQueue;
    this.healthFunction = this.jobs?.healthFunction ?? dynamoHealth?.function;
    this.retentionFunction = this.jobs?.retentionFunction;
    this.breakerFunction =
      this.jobs?.breakerFunction ??
      this.createDynamoBreakerFunction(props, settings, store, serviceEnvironment);

    const observability = createWorkerObservability(this, {
      props,
      settings,
      queue: this.queue,
      deadLetterQueue: this.deadLetterQueue,
      workerFunction: this.workerFunction,
      eventSource: this.eventSource,
      pollerService: this.pollerService,
      store,
      jobs: this.jobs,
      dynamoOutboxRelay,
      dynamoHealth,
      breakerFunction: this.breakerFunction,
      metricsNamespace,
      serviceName,
    });
    this.alarmTopic = observability.alarmTopic;
    this.alarms = observability.alarms;
    this.dashboard = observability.dashboard;
  }

  /** The DynamoDB store's breaker of the worker's event source mapping (runtime `lambda`, unless `breaker` is false). */
  private createDynamoBreakerFunction(
    props: WorkerSettings,
    settings: ResolvedWorkerSettings,
    store: WorkerStoreParts,
    serviceEnvironment: Readonly<Record<string, string>>,
  ): lambda.Function | undefined {
    if (!store.table || !settings.breaker || !this.eventSource) return undefined;
    return createDynamoBreaker(this, {
      table: store.table,
      settings,
      eventSource: this.eventSource,
      environment: {
        ...serviceEnvironment,
        ...store.workerEnvironment,
        WORKER_CONSUMER: props.consumer ?? 'case-worker',
      },
    });
  }

  /** The trigger that applies the PostgreSQL store's migrations on deploy, before the worker starts. */
  private createMigrationTrigger(store: WorkerStoreParts): triggers.Trigger | undefined {
    return store.migrationFunction
      ? new triggers.Trigger(this, 'MigrationTrigger', {
          handler: store.migrationFunction,
          timeout: Duration.minutes(5),
          executeOnHandlerChange: true,
          executeAfter: [(store.database as WorkerDatabase).instance],
          // The worker (function or poller service) and the jobs start only after the schema exists.
          executeBefore: [this.workerFunction ?? (this.pollerService as PollerService).service],
        })
      : undefined;
  }

  /** The DynamoDB store's outbox relay on its table's stream (unless `outboxRelay` is false). */
  private createStreamRelay(
    props: WorkerSettings,
    store: WorkerStoreParts,
    serviceEnvironment: Readonly<Record<string, string>>,
    production: boolean,
  ): DynamoOutboxRelay | undefined {
    if (!store.table || !(props.outboxRelay ?? true)) return undefined;
    return createDynamoOutboxRelay(this, {
      table: store.table,
      queue: this.queue,
      environment: { ...serviceEnvironment, ...store.workerEnvironment },
      production,
    });
  }

  /** The DynamoDB store's health job (unless `healthCheck` is false). */
  private createDynamoHealth(
    props: WorkerSettings,
    store: WorkerStoreParts,
    serviceEnvironment: Readonly<Record<string, string>>,
  ): { function: lambda.Function; schedule: Duration } | undefined {
    if (!store.table || !(props.healthCheck ?? true)) return undefined;
    const schedule = props.healthCheckSchedule ?? Duration.minutes(1);
    const fn = createDynamoHealthJob(this, {
      table: store.table,
      environment: {
        ...serviceEnvironment,
        ...store.workerEnvironment,
        WORKER_CONSUMER: props.consumer ?? 'case-worker',
      },
      schedule,
    });
    return { function: fn, schedule };
  }

  /** The store's parts, by `store` (a third store adds its branch here and its folder under `lib/stores/`). */
  private createStore(
    props: WorkerSettings,
    settings: ResolvedWorkerSettings,
    production: boolean,
  ): WorkerStoreParts {
    return settings.store === 'dynamodb'
      ? createDynamoDbStore(this, props, settings, production)
      : createPostgresStore(this, { ...props, vpc: requireVpc(props) }, settings, production);
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
   * Registers {@link checkQueueIdentity} as a validation of this construct: it runs at synth, after the whole
   * app is built, so a logical id pinned later with `overrideLogicalId` counts. Its errors fail the synth; a
   * warning (an acknowledged replacement) becomes a warning annotation. Setting names in the messages follow
   * bin/app.ts: `stages.<stage>.queueIdentity` when the app has a `stage` context, else the prop name.
   */
  private guardQueueIdentity(props: WorkerSettings): void {
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
}

/** The worker's VPC where its settings need one (resolveWorkerSettings has refused a missing one already). */
function requireVpc(props: WorkerSettings): ec2.IVpc {
  if (!props.vpc)
    throw new Error(
      "SqsDatabaseWorker needs a vpc for this store and runtime: pass vpc (a WorkerNetwork's vpc, or your own)",
    );
  return props.vpc;
}
