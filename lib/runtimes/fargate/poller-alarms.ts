import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as ecs from 'aws-cdk-lib/aws-ecs';

/** Percent of a task's CPU or memory above which the task alarms fire. */
const TASK_UTILIZATION_ALARM_PERCENT = 80;

/**
 * The poller service's alarms: fewer tasks running than desired for 5 minutes (tasks crash, cannot pull their
 * image or cannot start: Container Insights' task counts), and CPU or memory above 80 % of the task's for 3 of
 * 5 minutes (an undersized task; memory ends in an out-of-memory kill).
 *
 * @internal
 */
export function pollerAlarms(service: ecs.FargateService): Record<string, cloudwatch.AlarmProps> {
  const insights = (metricName: string) =>
    new cloudwatch.Metric({
      namespace: 'ECS/ContainerInsights',
      metricName,
      dimensionsMap: { ClusterName: service.cluster.clusterName, ServiceName: service.serviceName },
      statistic: cloudwatch.Stats.MINIMUM,
      period: Duration.minutes(1),
    });
  const utilization = {
    threshold: TASK_UTILIZATION_ALARM_PERCENT,
    evaluationPeriods: 5,
    datapointsToAlarm: 3,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
  };
  return {
    RunningTasksBelowDesired: {
      alarmDescription:
        'Fewer poller tasks run than the service wants, for 5 minutes: tasks crash at start (configuration, database), cannot pull the image or are stopped. Runbook: docs/deploy.md#fargate-runtime.',
      metric: new cloudwatch.MathExpression({
        expression: 'FILL(desired, 0) - FILL(running, 0)',
        usingMetrics: { desired: insights('DesiredTaskCount'), running: insights('RunningTaskCount') },
        label: 'desired − running tasks',
        period: Duration.minutes(1),
      }),
      threshold: 0,
      evaluationPeriods: 5,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    },
    TaskCpuHigh: {
      alarmDescription: `Poller tasks use more than ${TASK_UTILIZATION_ALARM_PERCENT} % of their CPU: raise taskCpu, or lower recordConcurrency.`,
      metric: service.metricCpuUtilization({ period: Duration.minutes(1) }),
      ...utilization,
    },
    TaskMemoryHigh: {
      alarmDescription: `Poller tasks use more than ${TASK_UTILIZATION_ALARM_PERCENT} % of their memory (an out-of-memory kill comes next): raise taskMemoryMiB, or lower maxPayloadBytes or recordConcurrency.`,
      metric: service.metricMemoryUtilization({ period: Duration.minutes(1) }),
      ...utilization,
    },
  };
}
