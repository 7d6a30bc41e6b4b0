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

const MINUTE = Duration.minutes(1);

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
 * write units, throttles, errors, conflicts and latency (DynamoDB store), the adaptive concurrency limit and the
 * signals of load, duplicates told apart (redelivery or resend) with the receive-count trend, the alarm states and
 * the breaker's transitions.
 *
 * @internal
 */
export function createWorkerDashboard(scope: Construct, props: WorkerDashboardProps): cloudwatch.Dashboard {
  const kit = dashboardKit(props);
  const dashboard = new cloudwatch.Dashboard(scope, 'Dashboard', {
    dashboardName: props.dashboardName,
    defaultInterval: Duration.hours(3),
  });
  // Each entry is one row of the dashboard, in this order.
  const rows: cloudwatch.IWidget[][] = [
    ...runtimeRows(props, kit),
    timingsRow(props, kit),
    ...(props.proxy ? [proxyRow(props.proxy, kit)] : []),
    ...(props.table
      ? [
          dynamoDbDashboardWidgets({
            table: props.table,
            maxWriteUnitsPerSecond: props.maxWriteUnitsPerSecond,
          }),
        ]
      : []),
    [rateWidget(kit), concurrencyWidget(kit), duplicateCopiesWidget(kit)],
    ...(props.healthFunction
      ? healthRows(props.healthFunction, kit, props.table ? 'dynamodb' : 'postgres')
      : []),
    ...(props.retentionFunction
      ? [
          [
            kit.graph(
              'Retention: rows removed and errors',
              [kit.emf(WORKER_METRICS.retentionRowsRemoved)],
              [props.retentionFunction.metricErrors({ period: MINUTE })],
            ),
          ],
        ]
      : []),
    [new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: [...props.alarms], width: 24, height: 8 })],
    ...(props.eventSourceMappingId
      ? [
          [
            kit.graph(
              'Event source mapping breaker: transitions',
              WORKER_METRICS.breaker.map((name) => kit.emf(name)),
            ),
          ],
        ]
      : []),
  ];
  for (const row of rows) dashboard.addWidgets(...row);
  return dashboard;
}

/**
 * The adaptive limit of records in flight (`ConcurrencyLimit`: the mapping's MaximumConcurrency on Lambda, the
 * poller's limit on Fargate) against the signals of load that move it.
 */
function concurrencyWidget({ graph, emf }: DashboardKit): cloudwatch.IWidget {
  return graph(
    'Adaptive concurrency: limit and signals of load',
    [emf(WORKER_METRICS.concurrencyLimit, cloudwatch.Stats.MAXIMUM)],
    WORKER_METRICS.load.map((name) => emf(name)),
  );
}

/** The dashboard's graph shape and its EMF metrics, bound to the worker's namespace and service. */
interface DashboardKit {
  readonly graph: (
    title: string,
    left: cloudwatch.IMetric[],
    right?: cloudwatch.IMetric[],
  ) => cloudwatch.GraphWidget;
  readonly emf: (name: string, statistic?: string) => cloudwatch.IMetric;
}

function dashboardKit(props: WorkerDashboardProps): DashboardKit {
  return {
    graph: (title, left, right = []) =>
      new cloudwatch.GraphWidget({ title, left, right, width: 8, height: 6 }),
    emf: (name, statistic = cloudwatch.Stats.SUM) =>
      workerMetric(props.metricsNamespace, props.serviceName, name, { statistic, period: MINUTE }),
  };
}

/** The queues, then the runtime's rows: the function and its event source mapping, or the poller's tasks. */
function runtimeRows(props: WorkerDashboardProps, kit: DashboardKit): cloudwatch.IWidget[][] {
  const { graph, emf } = kit;
  const queueWidgets = [
    graph(
      'Source queue: depth, in flight',
      [
        props.queue.metricApproximateNumberOfMessagesVisible({ period: MINUTE, label: 'visible' }),
        props.queue.metricApproximateNumberOfMessagesNotVisible({ period: MINUTE, label: 'in flight' }),
      ],
      [props.queue.metricApproximateAgeOfOldestMessage({ period: MINUTE, label: 'oldest age (s)' })],
    ),
    graph('DLQ depth', [props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: MINUTE })]),
  ];
  const outcomes = graph(
    'Worker outcomes (EMF)',
    WORKER_METRICS.outcomes.map((name) => emf(name)),
    [emf(WORKER_METRICS.batchSize), emf(WORKER_METRICS.handlerReruns)],
  );
  const fn = props.workerFunction;
  const mappingId = props.eventSourceMappingId;
  if (fn && mappingId) return functionRows(fn, mappingId, queueWidgets, outcomes, kit);
  if (props.pollerService) return pollerRows(props.pollerService, queueWidgets, outcomes, kit);
  return [];
}

/** Runtime `lambda`: the event source mapping's event counts, the function's invocations and durations. */
function functionRows(
  fn: lambda.IFunction,
  mappingId: string,
  queueWidgets: cloudwatch.IWidget[],
  outcomes: cloudwatch.IWidget,
  { graph }: DashboardKit,
): cloudwatch.IWidget[][] {
  const esm = (metricName: string) =>
    new cloudwatch.Metric({
      namespace: 'AWS/Lambda',
      metricName,
      dimensionsMap: { EventSourceMappingUUID: mappingId },
      statistic: cloudwatch.Stats.SUM,
      period: MINUTE,
    });
  return [
    [
      ...queueWidgets,
      graph('Event source mapping: event counts', [
        esm('PolledEventCount'),
        esm('InvokedEventCount'),
        esm('FilteredOutEventCount'),
        esm('FailedInvokeEventCount'),
        esm('DeletedEventCount'),
        esm('DroppedEventCount'),
      ]),
    ],
    [
      graph(
        'Function: invocations, errors, throttles',
        [
          fn.metricInvocations({ period: MINUTE }),
          fn.metricErrors({ period: MINUTE }),
          fn.metricThrottles({ period: MINUTE }),
        ],
        [fn.metric('ConcurrentExecutions', { statistic: cloudwatch.Stats.MAXIMUM, period: MINUTE })],
      ),
      graph('Function duration', [
        fn.metricDuration({ statistic: 'p50', period: MINUTE }),
        fn.metricDuration({ statistic: 'p99', period: MINUTE }),
        fn.metricDuration({ statistic: cloudwatch.Stats.MAXIMUM, period: MINUTE }),
      ]),
      outcomes,
    ],
  ];
}

/** Runtime `fargate`: the poller's desired, running and pending tasks, their CPU and memory. */
function pollerRows(
  service: ecs.FargateService,
  queueWidgets: cloudwatch.IWidget[],
  outcomes: cloudwatch.IWidget,
  { graph }: DashboardKit,
): cloudwatch.IWidget[][] {
  const insights = (metricName: string) =>
    new cloudwatch.Metric({
      namespace: 'ECS/ContainerInsights',
      metricName,
      dimensionsMap: { ClusterName: service.cluster.clusterName, ServiceName: service.serviceName },
      statistic: cloudwatch.Stats.MAXIMUM,
      period: MINUTE,
    });
  return [
    [
      ...queueWidgets,
      graph('Poller tasks: desired, running, pending', [
        insights('DesiredTaskCount'),
        insights('RunningTaskCount'),
        insights('PendingTaskCount'),
      ]),
    ],
    [
      graph('Poller tasks: CPU and memory (%)', [
        service.metricCpuUtilization({ period: MINUTE }),
        service.metricMemoryUtilization({ period: MINUTE }),
      ]),
      outcomes,
    ],
  ];
}

/** The worker's timings, its transaction time, and the instance's CPU and connections (PostgreSQL). */
function timingsRow(props: WorkerDashboardProps, { graph, emf }: DashboardKit): cloudwatch.IWidget[] {
  const { instance } = props;
  return [
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
            [instance.metricCPUUtilization({ period: MINUTE })],
            [instance.metricDatabaseConnections({ period: MINUTE, statistic: cloudwatch.Stats.MAXIMUM })],
          ),
        ]
      : []),
  ];
}

/** The proxy's connections and the outbox relay (PostgreSQL). */
function proxyRow(proxy: rds.IDatabaseProxy, { graph, emf }: DashboardKit): cloudwatch.IWidget[] {
  const rdsMetric = (metricName: string) =>
    new cloudwatch.Metric({
      namespace: 'AWS/RDS',
      metricName,
      dimensionsMap: { ProxyName: proxy.dbProxyName },
      statistic: cloudwatch.Stats.MAXIMUM,
      period: MINUTE,
    });
  return [
    graph('RDS Proxy connections', [
      rdsMetric('ClientConnections'),
      rdsMetric('DatabaseConnections'),
      rdsMetric('DatabaseConnectionsBorrowLatency'),
    ]),
    graph(
      'Outbox relay: oldest pending age (ms), published and failed',
      [emf(WORKER_METRICS.outboxOldestPendingAgeMs, cloudwatch.Stats.MAXIMUM)],
      [emf(WORKER_METRICS.outboxPublished), emf(WORKER_METRICS.outboxFailed)],
    ),
    graph('Outbox backlog (pending rows, health job)', [
      emf(WORKER_METRICS.health.outboxPending, cloudwatch.Stats.MAXIMUM),
    ]),
  ];
}

/** Retries and duplicates as a share of the records received. */
function rateWidget({ graph, emf }: DashboardKit): cloudwatch.IWidget {
  // One graph holds both expressions: their ids must differ (the shared `received` is the same metric).
  const rate = (metric: string, label: string) =>
    new cloudwatch.MathExpression({
      expression: `IF(FILL(received, 0) > 0, 100 * FILL(${metric.toLowerCase()}, 0) / FILL(received, 0), 0)`,
      usingMetrics: { [metric.toLowerCase()]: emf(metric), received: emf(WORKER_METRICS.batchSize) },
      label,
      period: MINUTE,
    });
  return graph('Retry and duplicate rate (% of records)', [
    rate('RetryableFailure', 'RetryableFailure %'),
    rate('Duplicate', 'Duplicate %'),
  ]);
}

/**
 * Duplicates told apart (a redelivery of the same SQS message is the red flag: visibility shorter than processing,
 * or deletes lost after commit; a resend is the producer's) against the receive-count trend of all records.
 */
function duplicateCopiesWidget({ graph, emf }: DashboardKit): cloudwatch.IWidget {
  return graph(
    'Duplicates: redelivery or resend; receive count (max, avg)',
    WORKER_METRICS.duplicateCopies.map((name) => emf(name)),
    [
      emf(WORKER_METRICS.receiveCount, cloudwatch.Stats.MAXIMUM),
      emf(WORKER_METRICS.receiveCount, cloudwatch.Stats.AVERAGE),
    ],
  );
}

/**
 * The health job's figures: quarantine, unfinished inbox rows, locks and long transactions (PostgreSQL) or expired
 * leases (DynamoDB), its own errors.
 */
function healthRows(
  healthFunction: lambda.IFunction,
  { graph, emf }: DashboardKit,
  store: 'postgres' | 'dynamodb',
): cloudwatch.IWidget[][] {
  const H = WORKER_METRICS.health;
  const max = (name: string) => emf(name, cloudwatch.Stats.MAXIMUM);
  return [
    [
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
      store === 'postgres'
        ? graph(
            'Database: lock waits, deadlocks, long transactions',
            [max(H.lockWaits), emf(H.deadlocks), max(H.longTransactions)],
            [max(H.lockWaitOldestMs), max(H.longTransactionOldestAgeMs)],
          )
        : graph('Inbox: PROCESSING items whose lease expired (health job)', [max(H.inboxLeasesExpired)]),
    ],
    [
      graph(
        'Health job: checks and errors',
        [emf(H.heartbeat)],
        [healthFunction.metricErrors({ period: MINUTE })],
      ),
    ],
  ];
}
