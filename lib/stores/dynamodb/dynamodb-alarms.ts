import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';

/** The operations the worker calls on its table (`WORKER_TABLE_ACTIONS`, as CloudWatch names them). */
const WORKER_OPERATIONS = [
  dynamodb.Operation.GET_ITEM,
  dynamodb.Operation.PUT_ITEM,
  dynamodb.Operation.UPDATE_ITEM,
  dynamodb.Operation.TRANSACT_WRITE_ITEMS,
  dynamodb.Operation.QUERY,
];

/**
 * Inputs of {@link dynamoDbAlarmSpecs} and {@link dynamoDbDashboardWidgets}.
 *
 * @internal
 */
export interface DynamoDbMonitoringProps {
  readonly table: dynamodb.ITable;
  /** The worker's received records (EMF `BatchSize`, 5-minute sum): the denominator of the conflict rate. */
  readonly receivedRecords: cloudwatch.IMetric;
  /** Transaction conflicts in percent of received records (5 minutes) above which the alarm fires. */
  readonly transactionConflictRatePercent: number;
  /** The write budget the concurrency was derived from: a line on the consumed-capacity graph. */
  readonly maxWriteUnitsPerSecond?: number;
}

/**
 * The alarms of the DynamoDB store, as specs for `createWorkerAlarms` (which adds the SNS actions):
 * throttled requests on the worker's operations (the write budget is exceeded: records come back retryable),
 * system errors (DynamoDB failing), and transaction conflicts above a rate of received records (concurrent
 * transactions on the same items: hot aggregates, or duplicates in flight together).
 *
 * @internal
 */
export function dynamoDbAlarmSpecs(props: DynamoDbMonitoringProps): Record<string, cloudwatch.AlarmProps> {
  const minute = Duration.minutes(1);
  const fiveMinutes = Duration.minutes(5);
  return {
    DynamoDbThrottles: {
      alarmDescription:
        'DynamoDB throttled requests of the worker in 3 of 5 minutes: the table is over its write budget (or a partition over 1,000 WCU/s); records are retried with backoff. Runbook: docs/deploy.md#dynamodb-store (lower maxConcurrency, raise maxWriteUnitsPerSecond, spread hot keys).',
      metric: props.table.metricThrottledRequestsForOperations({
        operations: WORKER_OPERATIONS,
        period: minute,
        label: 'throttled requests',
      }),
      threshold: 1,
      evaluationPeriods: 5,
      datapointsToAlarm: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    },
    DynamoDbSystemErrors: {
      alarmDescription:
        'DynamoDB returned server errors (HTTP 500) to the worker in 5 minutes: records are retried; check the AWS Health Dashboard if it persists.',
      metric: props.table.metricSystemErrorsForOperations({
        operations: WORKER_OPERATIONS,
        period: fiveMinutes,
        label: 'system errors',
      }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    },
    DynamoDbTransactionConflicts: {
      alarmDescription: `DynamoDB transaction conflicts above ${props.transactionConflictRatePercent} % of received records (5 minutes): concurrent transactions on the same items (a hot aggregate, duplicates in flight together). The records are retried; lower lockContentionSafeParallelism or spread the hot items.`,
      metric: new cloudwatch.MathExpression({
        expression: 'IF(FILL(received, 0) > 0, 100 * FILL(conflicts, 0) / FILL(received, 0), 0)',
        usingMetrics: {
          conflicts: transactionConflicts(props.table, fiveMinutes),
          received: props.receivedRecords,
        },
        label: 'TransactionConflict % of records',
        period: fiveMinutes,
      }),
      threshold: props.transactionConflictRatePercent,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    },
  };
}

/**
 * The DynamoDB row of the dashboard: consumed write units per second (against the write budget), throttled
 * requests, system errors with transaction conflicts, and the p99 latency of the gate put and the transaction
 * (what `recordLatencyMs` of the capacity formula estimates).
 *
 * @internal
 */
export function dynamoDbDashboardWidgets(
  props: Pick<DynamoDbMonitoringProps, 'table' | 'maxWriteUnitsPerSecond'>,
): cloudwatch.IWidget[] {
  const minute = Duration.minutes(1);
  const graph = (
    title: string,
    left: cloudwatch.IMetric[],
    right: cloudwatch.IMetric[] = [],
    leftAnnotations?: cloudwatch.HorizontalAnnotation[],
  ) => new cloudwatch.GraphWidget({ title, left, right, leftAnnotations, width: 6, height: 6 });
  const latency = (operation: dynamodb.Operation) =>
    props.table.metricSuccessfulRequestLatency({
      dimensionsMap: { TableName: props.table.tableName, Operation: operation },
      statistic: 'p99',
      period: minute,
      label: `${operation} p99 (ms)`,
    });
  return [
    graph(
      'DynamoDB: consumed write units per second',
      [
        new cloudwatch.MathExpression({
          expression: 'consumed / PERIOD(consumed)',
          usingMetrics: {
            consumed: props.table.metricConsumedWriteCapacityUnits({
              statistic: cloudwatch.Stats.SUM,
              period: minute,
            }),
          },
          label: 'consumed WCU/s',
          period: minute,
        }),
      ],
      [],
      props.maxWriteUnitsPerSecond === undefined
        ? undefined
        : [{ value: props.maxWriteUnitsPerSecond, label: 'write budget (maxWriteUnitsPerSecond)' }],
    ),
    // Two graphs: the per-operation expressions of throttles and of errors name their metrics alike.
    graph('DynamoDB: throttled requests', [
      props.table.metricThrottledRequestsForOperations({
        operations: WORKER_OPERATIONS,
        period: minute,
        label: 'throttled',
      }),
    ]),
    graph('DynamoDB: system errors and transaction conflicts', [
      props.table.metricSystemErrorsForOperations({
        operations: WORKER_OPERATIONS,
        period: minute,
        label: 'system errors',
      }),
      transactionConflicts(props.table, minute),
    ]),
    graph('DynamoDB: request latency', [
      latency(dynamodb.Operation.PUT_ITEM),
      latency(dynamodb.Operation.TRANSACT_WRITE_ITEMS),
    ]),
  ];
}

/** `TransactionConflict` of the table: transactions rejected because another one held an item. */
function transactionConflicts(table: dynamodb.ITable, period: Duration): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: 'AWS/DynamoDB',
    metricName: 'TransactionConflict',
    dimensionsMap: { TableName: table.tableName },
    statistic: cloudwatch.Stats.SUM,
    period,
    label: 'transaction conflicts',
  });
}
