import { Annotations, Duration, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { steersConcurrency } from '../jobs/breaker-function.ts';
import type { ScheduledJobs } from '../jobs/scheduled-jobs.ts';
import { auxiliaryProxyConnections, type ResolvedWorkerSettings } from '../resolve-worker-settings.ts';
import type { PollerService } from '../runtimes/fargate/poller-service.ts';
import { DYNAMODB_CAPACITY_DEFAULTS } from '../stores/dynamodb/dynamodb-capacity.ts';
import type { DynamoOutboxRelay } from '../stores/dynamodb/dynamodb-outbox-relay.ts';
import type { WorkerStoreParts } from '../stores/worker-store-parts.ts';
import type { WorkerSettings } from '../worker-settings.ts';
import { createWorkerAlarms, workerMetric } from './worker-alarms.ts';
import { createWorkerDashboard } from './worker-dashboard.ts';

/** E-mail domains reserved for examples (RFC 2606, RFC 6761): a placeholder address, nobody reads it. */
const PLACEHOLDER_EMAIL = /@(?:[^@]+\.)?(?:example\.(?:com|net|org)|example|invalid|test|localhost)$/i;

/** What the worker's alarms and dashboard watch: its queues, its runtime, its store and its jobs. */
export interface WorkerObservabilityInputs {
  readonly props: WorkerSettings;
  readonly settings: ResolvedWorkerSettings;
  readonly queue: sqs.IQueue;
  readonly deadLetterQueue: sqs.IQueue;
  readonly workerFunction: lambda.IFunction | undefined;
  readonly eventSource: SqsEventSource | undefined;
  readonly pollerService: PollerService | undefined;
  readonly store: WorkerStoreParts;
  readonly jobs: ScheduledJobs | undefined;
  /** The DynamoDB store's stream relay (when deployed). */
  readonly dynamoOutboxRelay: DynamoOutboxRelay | undefined;
  /** The breaker of the worker's event source mapping, either store's (when deployed). */
  readonly breakerFunction: lambda.IFunction | undefined;
  /** The DynamoDB store's health job and its schedule (when deployed). */
  readonly dynamoHealth: { readonly function: lambda.IFunction; readonly schedule: Duration } | undefined;
  readonly metricsNamespace: string;
  readonly serviceName: string;
}

/** The worker's alarm topic, its alarms by name and its dashboard. */
export interface WorkerObservability {
  readonly alarmTopic: sns.ITopic;
  readonly alarms: Readonly<Record<string, cloudwatch.Alarm>>;
  readonly dashboard: cloudwatch.Dashboard;
}

/**
 * The alarms (to `alarmTopic`, or to a topic of the worker's own that `alarmEmail` subscribes to) and the
 * dashboard of a worker, for whichever store and runtime it has. A new alarm goes in `createWorkerAlarms` (or the
 * store's alarm file) and shows on the dashboard by itself.
 *
 * @internal
 */
export function createWorkerObservability(
  scope: Construct,
  inputs: WorkerObservabilityInputs,
): WorkerObservability {
  const { props } = inputs;
  const alarmTopic = props.alarmTopic ?? createAlarmTopic(scope);
  if (props.alarmEmail) subscribeAlarmEmail(scope, alarmTopic, props.alarmEmail);
  const alarms = { ...workerAlarms(scope, alarmTopic, inputs), ...breakerAlarm(scope, alarmTopic, inputs) };
  const { store, jobs } = inputs;
  const dashboard = createWorkerDashboard(scope, {
    dashboardName: props.dashboardName,
    queue: inputs.queue,
    deadLetterQueue: inputs.deadLetterQueue,
    workerFunction: inputs.workerFunction,
    eventSourceMappingId: inputs.eventSource?.eventSourceMappingId,
    pollerService: inputs.pollerService?.service,
    instance: store.database?.instance,
    proxy: store.database?.proxy,
    table: store.table?.table,
    maxWriteUnitsPerSecond: writeBudget(inputs),
    metricsNamespace: inputs.metricsNamespace,
    serviceName: inputs.serviceName,
    healthFunction: jobs?.healthFunction ?? inputs.dynamoHealth?.function,
    retentionFunction: jobs?.retentionFunction,
    alarms: Object.values(alarms),
  });
  return { alarmTopic, alarms, dashboard };
}

/** Subscribes the on-call address, and warns when it is at a domain reserved for examples. */
function subscribeAlarmEmail(scope: Construct, topic: sns.ITopic, email: string): void {
  topic.addSubscription(new subscriptions.EmailSubscription(email));
  if (PLACEHOLDER_EMAIL.test(email)) {
    Annotations.of(scope).addWarningV2(
      'sqs-inbox-worker:placeholder-alarm-email',
      `alarmEmail (${email}) is at a reserved example domain that receives no mail: set the on-call address before deploying, or nobody reads the alarms`,
    );
  }
}

/** The queue, runtime, store and job alarms (`createWorkerAlarms`) with the settings' thresholds. */
function workerAlarms(
  scope: Construct,
  topic: sns.ITopic,
  inputs: WorkerObservabilityInputs,
): Record<string, cloudwatch.Alarm> {
  const { props, settings, store, jobs } = inputs;
  const retentionFunction = jobs?.retentionFunction;
  return createWorkerAlarms(scope, {
    topic,
    queue: inputs.queue,
    deadLetterQueue: inputs.deadLetterQueue,
    workerFunction: inputs.workerFunction,
    pollerService: inputs.pollerService?.service,
    functionTimeout: settings.timeout,
    instance: store.database?.instance,
    proxy: store.database?.proxy,
    table: store.table?.table,
    transactionConflictRatePercent: props.transactionConflictRatePercent ?? 5,
    maxWriteUnitsPerSecond: writeBudget(inputs),
    metricsNamespace: inputs.metricsNamespace,
    serviceName: inputs.serviceName,
    oldestMessageAgeSlo: props.oldestMessageAgeSlo ?? Duration.minutes(5),
    outboxPendingAgeSlo: jobs?.outboxRelayFunction
      ? (props.outboxPendingAgeSlo ?? Duration.minutes(5))
      : undefined,
    dynamoOutboxRelay: inputs.dynamoOutboxRelay
      ? {
          relay: inputs.dynamoOutboxRelay,
          pendingAgeSlo: props.outboxPendingAgeSlo ?? Duration.minutes(5),
        }
      : undefined,
    terminalFailureRatePercent: props.terminalFailureRatePercent ?? 1,
    retryRatePercent: props.retryRatePercent ?? 10,
    retryRateEvaluationPeriods: props.retryRateEvaluationPeriods ?? 3,
    duplicateRatePercent: props.duplicateRatePercent ?? 20,
    health: healthJobOf(inputs)
      ? {
          ...(healthJobOf(inputs) as { function: lambda.IFunction; schedule: Duration }),
          store: store.kind,
          quarantineAge: props.quarantineAgeAlarm ?? Duration.minutes(15),
          // Redelivered after the visibility timeout; a poller's heartbeat holds a record up to its last extension.
          visibilityTimeout: settings.poller
            ? settings.poller.visibility.plus(settings.poller.maxExtension)
            : settings.visibilityTimeout,
        }
      : undefined,
    retention:
      retentionFunction && settings.retention
        ? { function: retentionFunction, schedule: settings.retention.schedule }
        : undefined,
    connectionsAlarmPercent: props.connectionsAlarmPercent ?? 80,
    dbMaxConnections: settings.dbMaxConnections,
    proxyPoolConnections: Math.floor((settings.proxyMaxConnectionsPercent * settings.dbMaxConnections) / 100),
    expectedClientConnections:
      settings.maxConcurrency * settings.dbPoolSize + auxiliaryProxyConnections(props),
    concurrencyFloor:
      inputs.breakerFunction && steersConcurrency(settings) ? settings.adaptiveConcurrency?.floor : undefined,
  });
}

/** The health job of either store, with its schedule. */
function healthJobOf(
  inputs: WorkerObservabilityInputs,
): { function: lambda.IFunction; schedule: Duration } | undefined {
  const { jobs } = inputs;
  if (jobs?.healthFunction) return { function: jobs.healthFunction, schedule: jobs.healthSchedule };
  return inputs.dynamoHealth;
}

/** `BreakerOpened`: the breaker disabled the event source mapping (only with a breaker). */
function breakerAlarm(
  scope: Construct,
  topic: sns.ITopic,
  inputs: WorkerObservabilityInputs,
): Record<string, cloudwatch.Alarm> {
  if (!inputs.breakerFunction) return {};
  const breakerOpened = new cloudwatch.Alarm(scope, 'BreakerOpenedAlarm', {
    alarmDescription:
      'The breaker disabled the worker event source mapping: the database is unavailable to the worker. See docs/operations.md#circuit-breaker.',
    metric: workerMetric(inputs.metricsNamespace, inputs.serviceName, 'BreakerOpened'),
    threshold: 0,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 1,
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
  });
  const notify = new cloudwatchActions.SnsAction(topic);
  breakerOpened.addAlarmAction(notify);
  breakerOpened.addOkAction(notify);
  return { BreakerOpened: breakerOpened };
}

/**
 * A KMS-encrypted, TLS-only topic CloudWatch may publish to. The AWS-managed SNS key does not let CloudWatch use
 * it, hence a key of our own. A topic policy replaces the default one (which lets the account publish), so the
 * policy must allow `cloudwatch.amazonaws.com` to publish itself, or every alarm fires into the void: the alarm
 * shows the action failed in its history, and nobody is notified. Both the topic statement and the key statement
 * carry `aws:SourceAccount` (this stack's account) so only alarms of this account can use them (the
 * confused-deputy guard AWS recommends for service principals).
 */
function createAlarmTopic(scope: Construct): sns.Topic {
  const cloudWatch = new iam.ServicePrincipal('cloudwatch.amazonaws.com');
  const fromThisAccount = { StringEquals: { 'aws:SourceAccount': Stack.of(scope).account } };
  const key = new kms.Key(scope, 'AlarmTopicKey', {
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
  const topic = new sns.Topic(scope, 'AlarmTopic', {
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

/** The DynamoDB store's write budget (`maxWriteUnitsPerSecond`, or the capacity default); none on PostgreSQL. */
function writeBudget(inputs: WorkerObservabilityInputs): number | undefined {
  if (!inputs.store.table) return undefined;
  return inputs.props.maxWriteUnitsPerSecond ?? DYNAMODB_CAPACITY_DEFAULTS.maxWriteUnitsPerSecond;
}
