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
  /**
   * The write budget the concurrency was derived from: a line on the consumed-capacity graph, and the
   * `DynamoDbWriteBudget` alarm's reference.
   */
  readonly maxWriteUnitsPerSecond?: number;
}

/** Consumed write units, in percent of a limit, above which the write-usage alarms fire. */
const WRITE_USAGE_ALARM_PERCENT = 80;

/** The table's consumed write units per second over `period` (the 1-minute sums, divided by the period). */
function consumedWritesPerSecond(table: dynamodb.ITable, period: Duration): cloudwatch.MathExpression {
  return new cloudwatch.MathExpression({
    expression: 'consumed / PERIOD(consumed)',
    usingMetrics: {
      consumed: table.metricConsumedWriteCapacityUnits({ statistic: cloudwatch.Stats.SUM, period }),
    },
    label: 'consumed WCU/s',
    period,
  });
}

/**
 * `AccountMaxTableLevelWrites`: the most write units one table of the account may use — for an on-demand table the
 * cap on its write request units (40,000 by default; a service quota). An account metric, every 5 minutes.
 */
function tableWriteLimit(period: Duration): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: 'AWS/DynamoDB',
    metricName: 'AccountMaxTableLevelWrites',
    statistic: cloudwatch.Stats.MAXIMUM,
    period,
    label: 'table write limit (AccountMaxTableLevelWrites)',
  });
}

/**
 * The alarms of the DynamoDB store, as specs for `createWorkerAlarms` (which adds the SNS actions):
 * throttled requests on the worker's operations (the write budget is exceeded: records come back retryable),
 * system errors (DynamoDB failing), transaction conflicts above a rate of received records (concurrent
 * transactions on the same items: hot aggregates, or duplicates in flight together), and consumed write units
 * nearing a limit before any throttle: the write budget the concurrency was derived from (`DynamoDbWriteBudget`),
 * and the account's per-table limit, which caps an on-demand table (`DynamoDbTableWriteLimit`).
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
    ...(props.maxWriteUnitsPerSecond === undefined
      ? {}
      : {
          DynamoDbWriteBudget: {
            alarmDescription: `The worker's table consumed more than ${WRITE_USAGE_ALARM_PERCENT} % of its write budget (maxWriteUnitsPerSecond ${props.maxWriteUnitsPerSecond}) for 5 minutes: the concurrency derived from that budget no longer leaves it room, and throttles follow. Runbook: docs/deploy.md#dynamodb-store (raise maxWriteUnitsPerSecond if the table serves more, or lower maxConcurrency).`,
            metric: new cloudwatch.MathExpression({
              expression: `100 * FILL(writes, 0) / ${props.maxWriteUnitsPerSecond}`,
              usingMetrics: { writes: consumedWritesPerSecond(props.table, minute) },
              label: 'consumed WCU/s, % of the write budget',
              period: minute,
            }),
            threshold: WRITE_USAGE_ALARM_PERCENT,
            evaluationPeriods: 5,
            comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
          },
        }),
    DynamoDbTableWriteLimit: {
      alarmDescription: `The worker's table consumed more than ${WRITE_USAGE_ALARM_PERCENT} % of the account's per-table write limit (AccountMaxTableLevelWrites, the cap of an on-demand table) in 3 five-minute periods: DynamoDB throttles the table at the limit. Runbook: docs/deploy.md#dynamodb-store (request a higher table-level quota, or lower maxConcurrency).`,
      metric: new cloudwatch.MathExpression({
        expression: 'IF(FILL(limit, 0) > 0, 100 * FILL(writes, 0) / limit, 0)',
        usingMetrics: {
          writes: consumedWritesPerSecond(props.table, fiveMinutes),
          limit: tableWriteLimit(fiveMinutes),
        },
        label: 'consumed WCU/s, % of the table write limit',
        period: fiveMinutes,
      }),
      threshold: WRITE_USAGE_ALARM_PERCENT,
      evaluationPeriods: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    },
  };
}

/**
 * The DynamoDB row of the dashboard: consumed write units per second (against the write budget, and the account's
 * per-table limit on the right axis), throttled
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
      [consumedWritesPerSecond(props.table, minute)],
      [tableWriteLimit(Duration.minutes(5))],
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
