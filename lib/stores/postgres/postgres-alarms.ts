import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as rds from 'aws-cdk-lib/aws-rds';
import type { AlarmSpecs, WorkerAlarmsProps } from '../../observability/worker-alarms.ts';

/**
 * The PostgreSQL store: proxy client, proxy database and instance connections near their limits.
 *
 * @internal
 */
export function postgresAlarmSpecs(
  props: WorkerAlarmsProps,
  instance: rds.IDatabaseInstance,
  proxy: rds.IDatabaseProxy,
): AlarmSpecs {
  const percent = props.connectionsAlarmPercent;
  const nearFor5Minutes = (metric: cloudwatch.IMetric, limit: number) => ({
    metric,
    threshold: Math.max(1, Math.floor((limit * percent) / 100)),
    evaluationPeriods: 5,
    datapointsToAlarm: 3,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
  });
  const proxyMetric = (metricName: string) =>
    new cloudwatch.Metric({
      namespace: 'AWS/RDS',
      metricName,
      dimensionsMap: { ProxyName: proxy.dbProxyName },
      statistic: cloudwatch.Stats.MAXIMUM,
      period: Duration.minutes(1),
    });
  return {
    ProxyClientConnections: {
      alarmDescription: `Proxy client connections above ${percent} % of what the worker, relay and migration can open (${props.expectedClientConnections}): something else connects, or connections leak.`,
      ...nearFor5Minutes(proxyMetric('ClientConnections'), props.expectedClientConnections),
    },
    ProxyDatabaseConnections: {
      alarmDescription: `Proxy database connections above ${percent} % of its pool (${props.proxyPoolConnections}).`,
      ...nearFor5Minutes(proxyMetric('DatabaseConnections'), props.proxyPoolConnections),
    },
    DatabaseConnections: {
      alarmDescription: `Database connections above ${percent} % of max_connections (${props.dbMaxConnections}).`,
      ...nearFor5Minutes(
        instance.metricDatabaseConnections({
          statistic: cloudwatch.Stats.MAXIMUM,
          period: Duration.minutes(1),
        }),
        props.dbMaxConnections,
      ),
    },
  };
}
