import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as ecs from 'aws-cdk-lib/aws-ecs';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as rds from 'aws-cdk-lib/aws-rds';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { healthAlarmSpecs, outboxAlarmSpecs, retentionAlarmSpecs } from '../jobs/job-alarms.ts';
import { pollerAlarms } from '../runtimes/fargate/poller-alarms.ts';
import { dynamoDbAlarmSpecs } from '../stores/dynamodb/dynamodb-alarms.ts';
import {
  type DynamoOutboxRelay,
  dynamoOutboxRelayAlarmSpecs,
} from '../stores/dynamodb/dynamodb-outbox-relay.ts';
import { postgresAlarmSpecs } from '../stores/postgres/postgres-alarms.ts';
import { WORKER_METRICS } from './worker-metrics.ts';

/**
 * Inputs of {@link createWorkerAlarms}.
 *
 * @internal
 */
export interface WorkerAlarmsProps {
  readonly topic: sns.ITopic;
  readonly queue: sqs.IQueue;
  readonly deadLetterQueue: sqs.IQueue;
  /** The worker function (runtime `lambda`): its errors, throttles and duration get alarms. */
  readonly workerFunction?: lambda.IFunction;
  readonly functionTimeout: Duration;
  /** The poller service (runtime `fargate`): running tasks below desired, CPU and memory high. */
  readonly pollerService?: ecs.FargateService;
  /** The PostgreSQL store's instance and proxy: the connection alarms (`store: 'postgres'`). */
  readonly instance?: rds.IDatabaseInstance;
  readonly proxy?: rds.IDatabaseProxy;
  /** The DynamoDB store's table: throttle, system error and transaction conflict alarms (`store: 'dynamodb'`). */
  readonly table?: dynamodb.ITable;
  /** Transaction conflicts in percent of received records that fire the conflict alarm (with `table`). */
  readonly transactionConflictRatePercent?: number;
  /** The table's write budget (with `table`): the `DynamoDbWriteBudget` alarm's reference. */
  readonly maxWriteUnitsPerSecond?: number;
  readonly metricsNamespace: string;
  readonly serviceName: string;
  readonly oldestMessageAgeSlo: Duration;
  readonly outboxPendingAgeSlo: Duration | undefined;
  /** The DynamoDB store's stream relay, and how far behind the stream it may fall (`outboxPendingAgeSlo`). */
  readonly dynamoOutboxRelay?: { readonly relay: DynamoOutboxRelay; readonly pendingAgeSlo: Duration };
  readonly terminalFailureRatePercent: number;
  /** Retry-rate alarm: percent of received records, over `retryRateEvaluationPeriods` 5-minute periods. */
  readonly retryRatePercent: number;
  readonly retryRateEvaluationPeriods: number;
  /** Duplicate-spike alarm: percent of received records in one 5-minute period. */
  readonly duplicateRatePercent: number;
  /** The health job and the thresholds of the alarms on its figures; undefined when it is not deployed. */
  readonly health?: {
    readonly function: lambda.IFunction;
    /** Whose figures: DynamoDB has no lock waits or deadlocks, so their alarms are PostgreSQL's only. */
    readonly store: 'postgres' | 'dynamodb';
    /** How often it runs: the period of its metrics. */
    readonly schedule: Duration;
    /** Age of the oldest open quarantine entry that fires the quarantine alarm. */
    readonly quarantineAge: Duration;
    /** The source queue's visibility timeout: an in-flight message older than this has been redelivered. */
    readonly visibilityTimeout: Duration;
  };
  /** The retention job and its schedule; an alarm on its errors when it is deployed. */
  readonly retention?: { readonly function: lambda.IFunction; readonly schedule: Duration };
  readonly connectionsAlarmPercent: number;
  /** `max_connections` of the database. */
  readonly dbMaxConnections: number;
  /** Proxy pool limit: ⌊maxConnectionsPercent × max_connections / 100⌋. */
  readonly proxyPoolConnections: number;
  /** Client connections the worker, relay and migration can open at most. */
  readonly expectedClientConnections: number;
  /**
   * The floor of the event source mapping's `MaximumConcurrency` (`concurrencyFloor`) when the breaker's control
   * loop steers it (runtime `lambda`, mode `maximum-concurrency`, `adaptiveConcurrency` on): the
   * `ConcurrencyAtFloor` alarm's threshold. No alarm without it.
   */
  readonly concurrencyFloor?: number;
}

/**
 * An EMF metric of the worker (or the relay), with the single `service` dimension it is emitted with.
 * Exported so the dashboard draws the same series the alarms watch.
 *
 * @internal
 */
export function workerMetric(
  namespace: string,
  serviceName: string,
  metricName: string,
  options: cloudwatch.MetricOptions = {},
): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace,
    metricName,
    dimensionsMap: { [WORKER_METRICS.dimension]: serviceName },
    statistic: cloudwatch.Stats.SUM,
    period: Duration.minutes(1),
    ...options,
  });
}

/**
 * Creates every alarm of the worker, each notifying `topic` on ALARM and on OK:
 * DLQ not empty; oldest message older than the SLO; function errors; throttles; duration p99 above 80 % of the
 * timeout (runtime `lambda`); running tasks below desired, task CPU and memory above 80 % (runtime `fargate`);
 * HashMismatch > 0; QuarantineFailed > 0; PayloadAccessDenied > 0; TerminalFailure rate; proxy client connections, proxy database connections and
 * instance connections near their limits (PostgreSQL store); DynamoDB throttled requests, system errors and
 * transaction conflict rate (DynamoDB store); outbox oldest pending age (when the relay is deployed), or the stream
 * relay's errors, iterator age and given-up records (DynamoDB store); retry rate;
 * duplicate spike; the mapping's MaximumConcurrency held at its floor for 30 minutes (with the breaker's control
 * loop); and, with the health job: open quarantine entry age, lock waits, deadlocks, in-flight age
 * above the visibility timeout, health job errors and the health job not running (missing data breaches).
 *
 * @returns the alarms by name.
 *
 * @internal
 */
export function createWorkerAlarms(
  scope: Construct,
  props: WorkerAlarmsProps,
): Record<string, cloudwatch.Alarm> {
  const emf: EmfMetric = (name, options) =>
    workerMetric(props.metricsNamespace, props.serviceName, name, options);
  const { instance, proxy, table, workerFunction, pollerService, health, retention } = props;
  // The order of the families is the order of the alarms in the template; keep it.
  const specs: AlarmSpecs = {
    ...queueAlarmSpecs(props),
    ...outcomeAlarmSpecs(props, emf),
    ...(instance && proxy ? postgresAlarmSpecs(props, instance, proxy) : {}),
    ...(table
      ? dynamoDbAlarmSpecs({
          table,
          receivedRecords: emf(WORKER_METRICS.batchSize, { period: Duration.minutes(5) }),
          transactionConflictRatePercent: props.transactionConflictRatePercent ?? 5,
          ...(props.maxWriteUnitsPerSecond === undefined
            ? {}
            : { maxWriteUnitsPerSecond: props.maxWriteUnitsPerSecond }),
        })
      : {}),
    ...(workerFunction ? workerFunctionAlarmSpecs(workerFunction, props.functionTimeout) : {}),
    ...(pollerService ? pollerAlarms(pollerService) : {}),
    ...rateAlarmSpecs(props, emf),
    ...(props.concurrencyFloor === undefined ? {} : concurrencyAlarmSpecs(props.concurrencyFloor, emf)),
    ...(health ? healthAlarmSpecs(health, emf) : {}),
    ...(retention ? retentionAlarmSpecs(retention) : {}),
    ...(props.outboxPendingAgeSlo ? outboxAlarmSpecs(props.outboxPendingAgeSlo, emf) : {}),
    ...(props.dynamoOutboxRelay
      ? dynamoOutboxRelayAlarmSpecs(props.dynamoOutboxRelay.relay, props.dynamoOutboxRelay.pendingAgeSlo)
      : {}),
  };
  return notifyingAlarms(scope, props.topic, specs);
}

/** Alarm props by alarm name; the name plus `Alarm` is the construct id. @internal */
export type AlarmSpecs = Record<string, cloudwatch.AlarmProps>;

/** A worker EMF metric of the stack's namespace and service (see {@link workerMetric}). @internal */
export type EmfMetric = (name: string, options?: cloudwatch.MetricOptions) => cloudwatch.Metric;

/**
 * Creates an alarm per spec, in the specs' order (construct id `${name}Alarm`, missing data not breaching unless
 * the spec says otherwise), each notifying `topic` on ALARM and on OK.
 */
function notifyingAlarms(
  scope: Construct,
  topic: sns.ITopic,
  specs: AlarmSpecs,
): Record<string, cloudwatch.Alarm> {
  const action = new actions.SnsAction(topic);
  const alarms: Record<string, cloudwatch.Alarm> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const alarm = new cloudwatch.Alarm(scope, `${name}Alarm`, {
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      ...spec,
    });
    alarm.addAlarmAction(action);
    alarm.addOkAction(action);
    alarms[name] = alarm;
  }
  return alarms;
}

/** The source queue and the DLQ: a message in the DLQ; the oldest source message older than the SLO. */
function queueAlarmSpecs(props: WorkerAlarmsProps): AlarmSpecs {
  return {
    DlqNotEmpty: {
      alarmDescription: 'Messages reached the DLQ. Runbook: sqs-worker dlq peek / group, fix, then redrive.',
      metric: props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        statistic: cloudwatch.Stats.MAXIMUM,
        period: Duration.minutes(1),
      }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    },
    OldestMessageAge: {
      alarmDescription: `The oldest source message is older than the SLO (${props.oldestMessageAgeSlo.toSeconds()} s): the worker is behind or stuck.`,
      metric: props.queue.metricApproximateAgeOfOldestMessage({
        statistic: cloudwatch.Stats.MAXIMUM,
        period: Duration.minutes(1),
      }),
      threshold: props.oldestMessageAgeSlo.toSeconds(),
      evaluationPeriods: 5,
      datapointsToAlarm: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    },
  };
}

/** Outcomes of records the worker reports: hash mismatches, failed quarantines, denied payloads, terminal rate. */
function outcomeAlarmSpecs(props: WorkerAlarmsProps, emf: EmfMetric): AlarmSpecs {
  const anyIn5Minutes = (metricName: string) => ({
    metric: emf(metricName, { period: Duration.minutes(5) }),
    threshold: 0,
    evaluationPeriods: 1,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
  });
  return {
    HashMismatch: {
      alarmDescription:
        'A message reused an idempotency key with a different payload (HashMismatch > 0): a producer bug. Runbook: quarantine list.',
      ...anyIn5Minutes('HashMismatch'),
    },
    QuarantineFailed: {
      alarmDescription:
        'A terminal message could not be quarantined (QuarantineFailed > 0): it is reported instead, and reaches the DLQ if the store keeps failing. Read the worker log line worker_message_retryable_failure with quarantineFailed: the store error follows "[quarantine failed: …]". Runbook: docs/operations.md#alarm-quarantinefailed.',
      ...anyIn5Minutes('QuarantineFailed'),
    },
    PayloadAccessDenied: {
      alarmDescription:
        'The worker was denied reading a payloadRef object (PayloadAccessDenied > 0): the records are retried until the attempt policy ends them. Grant the worker s3:GetObject and s3:GetObjectVersion on the bucket (and kms:Decrypt on its key); see docs/large-payloads.md.',
      ...anyIn5Minutes('PayloadAccessDenied'),
    },
    TerminalFailureRate: {
      alarmDescription: `Terminal failures above ${props.terminalFailureRatePercent} % of received records (5 minutes).`,
      metric: new cloudwatch.MathExpression({
        expression: 'IF(FILL(received, 0) > 0, 100 * FILL(terminal, 0) / FILL(received, 0), 0)',
        usingMetrics: {
          terminal: emf('TerminalFailure', { period: Duration.minutes(5) }),
          received: emf(WORKER_METRICS.batchSize, { period: Duration.minutes(5) }),
        },
        label: 'TerminalFailure % of records',
        period: Duration.minutes(5),
      }),
      threshold: props.terminalFailureRatePercent,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    },
  };
}

/** The worker function (runtime `lambda`): errors, throttles, duration p99 above 80 % of the timeout. */
function workerFunctionAlarmSpecs(fn: lambda.IFunction, timeout: Duration): AlarmSpecs {
  const timeoutMs = timeout.toMilliseconds();
  const anyIn3Of5Minutes = {
    threshold: 1,
    evaluationPeriods: 5,
    datapointsToAlarm: 3,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
  };
  return {
    FunctionErrors: {
      alarmDescription: 'Whole invocations failed (a full-batch connection failure, a crash or a timeout).',
      metric: fn.metricErrors({ period: Duration.minutes(1) }),
      ...anyIn3Of5Minutes,
    },
    FunctionThrottles: {
      alarmDescription:
        'The worker was throttled: reserved concurrency is below the event source maxConcurrency.',
      metric: fn.metricThrottles({ period: Duration.minutes(1) }),
      ...anyIn3Of5Minutes,
    },
    DurationNearTimeout: {
      alarmDescription: `Duration p99 is above 80 % of the function timeout (${timeoutMs} ms): invocations risk timing out.`,
      metric: fn.metricDuration({ statistic: 'p99', period: Duration.minutes(5) }),
      threshold: Math.floor(timeoutMs * 0.8),
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    },
  };
}

/** Retryable failures and duplicates in percent of received records. */
function rateAlarmSpecs(props: WorkerAlarmsProps, emf: EmfMetric): AlarmSpecs {
  const rate = (metric: string, label: string) =>
    new cloudwatch.MathExpression({
      expression: `IF(FILL(received, 0) > 0, 100 * FILL(part, 0) / FILL(received, 0), 0)`,
      usingMetrics: {
        part: emf(metric, { period: Duration.minutes(5) }),
        received: emf(WORKER_METRICS.batchSize, { period: Duration.minutes(5) }),
      },
      label,
      period: Duration.minutes(5),
    });
  return {
    RetryRate: {
      alarmDescription: `Retryable failures above ${props.retryRatePercent} % of received records for ${props.retryRateEvaluationPeriods} × 5 minutes: a dependency or the database is failing. Runbook: docs/operations.md#alarm-retryrate.`,
      metric: rate('RetryableFailure', 'RetryableFailure % of records'),
      threshold: props.retryRatePercent,
      evaluationPeriods: props.retryRateEvaluationPeriods,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    },
    DuplicateRateSpike: {
      alarmDescription: `Duplicates above ${props.duplicateRatePercent} % of received records in 5 minutes: a producer resends, a redrive loops, or processing outlasts the visibility timeout. Runbook: docs/operations.md#alarm-duplicateratespike.`,
      metric: rate('Duplicate', 'Duplicate % of records'),
      threshold: props.duplicateRatePercent,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    },
  };
}

/**
 * The breaker's control loop held the mapping's `MaximumConcurrency` at its floor for 30 minutes: the fleet's signals
 * of load never let it grow again, so the database needs a human (a pin at the floor alarms too). Missing data (the
 * breaker open, a provisioned mapping) does not breach.
 */
function concurrencyAlarmSpecs(floor: number, emf: EmfMetric): AlarmSpecs {
  return {
    ConcurrencyAtFloor: {
      alarmDescription: `The event source mapping's MaximumConcurrency has been at its floor (${floor}) for 30 minutes: the worker's records keep meeting contention, throttling or slow statements in the database (LoadContention, LoadThrottle, LoadUnavailable, LoadSlow). Look at the database; sqs-worker concurrency status shows the limit. Runbook: docs/operations.md#adaptive-concurrency.`,
      metric: emf(WORKER_METRICS.concurrencyLimit, {
        statistic: cloudwatch.Stats.MAXIMUM,
        period: Duration.minutes(1),
      }),
      threshold: floor,
      evaluationPeriods: 30,
      datapointsToAlarm: 30,
      comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_OR_EQUAL_TO_THRESHOLD,
    },
  };
}
