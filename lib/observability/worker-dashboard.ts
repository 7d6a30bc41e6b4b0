import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as ecs from 'aws-cdk-lib/aws-ecs';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as rds from 'aws-cdk-lib/aws-rds';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { METRIC_NAMES } from '../../lambda/constants.ts';
import { dynamoDbDashboardWidgets } from '../stores/dynamodb/dynamodb-alarms.ts';
import { workerMetric } from './worker-alarms.ts';
import { WORKER_METRICS } from './worker-metrics.ts';

/**
 * Inputs of {@link createWorkerDashboard}.
 *
 * @internal
 */
export interface WorkerDashboardProps {
  readonly dashboardName?: string;
  readonly queue: sqs.IQueue;
  readonly deadLetterQueue: sqs.IQueue;
  /** The worker function (runtime `lambda`). */
  readonly workerFunction?: lambda.IFunction;
  /** Id of the event source mapping (for the ESM EventCount metrics; runtime `lambda`). */
  readonly eventSourceMappingId?: string;
  /** The poller service (runtime `fargate`): its task counts, CPU and memory get widgets instead. */
  readonly pollerService?: ecs.FargateService;
  /** The PostgreSQL store's instance and proxy: the RDS, proxy and outbox widgets (`store: 'postgres'`). */
  readonly instance?: rds.IDatabaseInstance;
  readonly proxy?: rds.IDatabaseProxy;
  /** The DynamoDB store's table: its row of widgets (`store: 'dynamodb'`). */
  readonly table?: dynamodb.ITable;
  /** The write budget, drawn on the consumed write units graph (with `table`). */
  readonly maxWriteUnitsPerSecond?: number;
  readonly metricsNamespace: string;
  readonly serviceName: string;
  /** The health job; its figures get widgets of their own when it is deployed. */
  readonly healthFunction?: lambda.IFunction;
  /** The retention job; its rows removed get a widget when it is deployed. */
  readonly retentionFunction?: lambda.IFunction;
  readonly alarms: readonly cloudwatch.IAlarm[];
}

/**
 * The worker's CloudWatch dashboard: queue depth, in-flight, oldest age, DLQ depth, event source event counts,
 * function invocations/errors/throttles/duration/concurrency (runtime `lambda`) or the poller's running and
 * desired tasks, CPU and memory (runtime `fargate`), the worker's EMF outcomes and timings, database
 * transaction time, RDS CPU and connections and proxy connections (PostgreSQL store) or the table's consumed
 * write units, throttles, errors, conflicts and latency (DynamoDB store), the alarm states and the breaker's
 * transitions.
 *
 * @internal
 */
export function createWorkerDashboard(scope: Construct, props: WorkerDashboardProps): cloudwatch.Dashboard {
  const minute = Duration.minutes(1);
  const emf = (name: string, statistic: string = cloudwatch.Stats.SUM) =>
    workerMetric(props.metricsNamespace, props.serviceName, name, { statistic, period: minute });
  const esm = (mappingId: string, metricName: string) =>
    new cloudwatch.Metric({
      namespace: 'AWS/Lambda',
      metricName,
      dimensionsMap: { EventSourceMappingUUID: mappingId },
      statistic: cloudwatch.Stats.SUM,
      period: minute,
    });
  const rdsMetric = (metricName: string, dimensionsMap: Record<string, string>) =>
    new cloudwatch.Metric({
      namespace: 'AWS/RDS',
      metricName,
      dimensionsMap,
      statistic: cloudwatch.Stats.MAXIMUM,
      period: minute,
    });
  const { instance, proxy } = props;
  const graph = (title: string, left: cloudwatch.IMetric[], right: cloudwatch.IMetric[] = []) =>
    new cloudwatch.GraphWidget({ title, left, right, width: 8, height: 6 });

  const dashboard = new cloudwatch.Dashboard(scope, 'Dashboard', {
    dashboardName: props.dashboardName,
    defaultInterval: Duration.hours(3),
  });
  const queueWidgets = [
    graph(
      'Source queue: depth, in flight',
      [
        props.queue.metricApproximateNumberOfMessagesVisible({ period: minute, label: 'visible' }),
        props.queue.metricApproximateNumberOfMessagesNotVisible({ period: minute, label: 'in flight' }),
      ],
      [props.queue.metricApproximateAgeOfOldestMessage({ period: minute, label: 'oldest age (s)' })],
    ),
    graph('DLQ depth', [props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: minute })]),
  ];
  const outcomes = graph(
    'Worker outcomes (EMF)',
    WORKER_METRICS.outcomes.map((name) => emf(name)),
    [emf(WORKER_METRICS.batchSize), emf(WORKER_METRICS.handlerReruns)],
  );
  const fn = props.workerFunction;
  const mappingId = props.eventSourceMappingId;
  if (fn && mappingId) {
    dashboard.addWidgets(
      ...queueWidgets,
      graph('Event source mapping: event counts', [
        esm(mappingId, 'PolledEventCount'),
        esm(mappingId, 'InvokedEventCount'),
        esm(mappingId, 'FilteredOutEventCount'),
        esm(mappingId, 'FailedInvokeEventCount'),
        esm(mappingId, 'DeletedEventCount'),
        esm(mappingId, 'DroppedEventCount'),
      ]),
    );
    dashboard.addWidgets(
      graph(
        'Function: invocations, errors, throttles',
        [
          fn.metricInvocations({ period: minute }),
          fn.metricErrors({ period: minute }),
          fn.metricThrottles({ period: minute }),
        ],
        [fn.metric('ConcurrentExecutions', { statistic: cloudwatch.Stats.MAXIMUM, period: minute })],
      ),
      graph('Function duration', [
        fn.metricDuration({ statistic: 'p50', period: minute }),
        fn.metricDuration({ statistic: 'p99', period: minute }),
        fn.metricDuration({ statistic: cloudwatch.Stats.MAXIMUM, period: minute }),
      ]),
      outcomes,
    );
  } else if (props.pollerService) {
    const service = props.pollerService;
    const insights = (metricName: string) =>
      new cloudwatch.Metric({
        namespace: 'ECS/ContainerInsights',
        metricName,
        dimensionsMap: { ClusterName: service.cluster.clusterName, ServiceName: service.serviceName },
        statistic: cloudwatch.Stats.MAXIMUM,
        period: minute,
      });
    dashboard.addWidgets(
      ...queueWidgets,
      graph('Poller tasks: desired, running, pending', [
        insights('DesiredTaskCount'),
        insights('RunningTaskCount'),
        insights('PendingTaskCount'),
      ]),
    );
    dashboard.addWidgets(
      graph('Poller tasks: CPU and memory (%)', [
        service.metricCpuUtilization({ period: minute }),
        service.metricMemoryUtilization({ period: minute }),
      ]),
      outcomes,
    );
  }
  dashboard.addWidgets(
    graph(
      'Worker timings (EMF, p99)',
      WORKER_METRICS.timings
        .filter((name) => name !== METRIC_NAMES.dbTransactionMs)
        .map((name) => emf(name, 'p99')),
    ),
    graph('DB transaction time (EMF)', [
      emf(METRIC_NAMES.dbTransactionMs, 'p50'),
      emf(METRIC_NAMES.dbTransactionMs, 'p99'),
    ]),
    ...(instance
      ? [
          graph(
            'RDS: CPU and connections',
            [instance.metricCPUUtilization({ period: minute })],
            [instance.metricDatabaseConnections({ period: minute, statistic: cloudwatch.Stats.MAXIMUM })],
          ),
        ]
      : []),
  );
  if (proxy) {
    dashboard.addWidgets(
      graph('RDS Proxy connections', [
        rdsMetric('ClientConnections', { ProxyName: proxy.dbProxyName }),
        rdsMetric('DatabaseConnections', { ProxyName: proxy.dbProxyName }),
        rdsMetric('DatabaseConnectionsBorrowLatency', { ProxyName: proxy.dbProxyName }),
      ]),
      graph(
        'Outbox relay: oldest pending age (ms), published and failed',
        [emf(WORKER_METRICS.outboxOldestPendingAgeMs, cloudwatch.Stats.MAXIMUM)],
        [emf(WORKER_METRICS.outboxPublished), emf(WORKER_METRICS.outboxFailed)],
      ),
      graph('Outbox backlog (pending rows, health job)', [
        emf(WORKER_METRICS.health.outboxPending, cloudwatch.Stats.MAXIMUM),
      ]),
    );
  }
  if (props.table) {
    dashboard.addWidgets(
      ...dynamoDbDashboardWidgets({
        table: props.table,
        maxWriteUnitsPerSecond: props.maxWriteUnitsPerSecond,
      }),
    );
  }
  // One graph holds both expressions: their ids must differ (the shared `received` is the same metric).
  const rate = (metric: string, label: string) =>
    new cloudwatch.MathExpression({
      expression: `IF(FILL(received, 0) > 0, 100 * FILL(${metric.toLowerCase()}, 0) / FILL(received, 0), 0)`,
      usingMetrics: { [metric.toLowerCase()]: emf(metric), received: emf(WORKER_METRICS.batchSize) },
      label,
      period: minute,
    });
  dashboard.addWidgets(
    graph('Retry and duplicate rate (% of records)', [
      rate('RetryableFailure', 'RetryableFailure %'),
      rate('Duplicate', 'Duplicate %'),
    ]),
  );
  if (props.healthFunction) {
    const H = WORKER_METRICS.health;
    const max = (name: string) => emf(name, cloudwatch.Stats.MAXIMUM);
    dashboard.addWidgets(
      graph(
        'Quarantine: open entries and oldest age (ms)',
        [max(H.quarantineOpen)],
        [max(H.quarantineOldestOpenAgeMs)],
      ),
      graph(
        'Inbox: unfinished rows and oldest in flight (ms)',
        [
          max(H.inboxReceived),
          max(H.inboxProcessing),
          max(H.inboxFailedRetryable),
          max(H.inboxFailedTerminal),
        ],
        [
          max(H.inboxOldestInFlightAgeMs),
          max(H.inboxOldestProcessingAgeMs),
          max(H.inboxOldestRetryableAgeMs),
        ],
      ),
      graph(
        'Database: lock waits, deadlocks, long transactions',
        [max(H.lockWaits), emf(H.deadlocks), max(H.longTransactions)],
        [max(H.lockWaitOldestMs), max(H.longTransactionOldestAgeMs)],
      ),
    );
    dashboard.addWidgets(
      graph(
        'Health job: checks and errors',
        [emf(H.heartbeat)],
        [props.healthFunction.metricErrors({ period: minute })],
      ),
    );
  }
  if (props.retentionFunction) {
    dashboard.addWidgets(
      graph(
        'Retention: rows removed and errors',
        [emf(WORKER_METRICS.retentionRowsRemoved)],
        [props.retentionFunction.metricErrors({ period: minute })],
      ),
    );
  }
  dashboard.addWidgets(
    new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: [...props.alarms], width: 24, height: 8 }),
  );
  if (mappingId) {
    dashboard.addWidgets(
      graph(
        'Event source mapping breaker: transitions',
        WORKER_METRICS.breaker.map((name) => emf(name)),
      ),
    );
  }
  return dashboard;
}
