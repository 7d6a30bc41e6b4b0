import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { AlarmSpecs, EmfMetric, WorkerAlarmsProps } from '../observability/worker-alarms.ts';
import { WORKER_METRICS } from '../observability/worker-metrics.ts';

/**
 * The health job's figures (open quarantine age, in-flight age; lock waits and deadlocks on PostgreSQL) and the job
 * itself (errors; not running, where missing data breaches).
 *
 * @internal
 */
export function healthAlarmSpecs(
  health: NonNullable<WorkerAlarmsProps['health']>,
  emf: EmfMetric,
): AlarmSpecs {
  const H = WORKER_METRICS.health;
  const period = health.schedule;
  const maximum = (name: string) => emf(name, { statistic: cloudwatch.Stats.MAXIMUM, period });
  const postgresHealthAlarms = (): AlarmSpecs => ({
    LockWaits: {
      alarmDescription:
        'Sessions waited for locks at 3 health checks in a row: a long transaction or a hot aggregate blocks the worker. Runbook: docs/operations.md#alarm-lockwaits.',
      metric: maximum(H.lockWaits),
      threshold: 1,
      evaluationPeriods: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    },
    Deadlocks: {
      alarmDescription:
        'PostgreSQL detected a deadlock (Deadlocks > 0 in 5 minutes): two transactions lock rows in opposite order. Runbook: docs/operations.md#alarm-deadlocks.',
      metric: emf(H.deadlocks, { period: Duration.minutes(5) }),
      threshold: 0,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    },
  });
  return {
    QuarantineAge: {
      alarmDescription: `An open quarantine entry is older than ${health.quarantineAge.toMinutes()} minutes: a terminal message waits for a decision. Runbook: docs/operations.md#alarm-quarantineage.`,
      metric: maximum(H.quarantineOldestOpenAgeMs),
      threshold: health.quarantineAge.toMilliseconds(),
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    },
    ...(health.store === 'postgres' ? postgresHealthAlarms() : {}),
    InFlightAge: {
      alarmDescription: `A message has been in flight (claimed, its transaction open) longer than the visibility timeout (${health.visibilityTimeout.toSeconds()} s): SQS has delivered it again. Runbook: docs/operations.md#alarm-inflightage.`,
      metric: maximum(H.inboxOldestInFlightAgeMs),
      threshold: health.visibilityTimeout.toMilliseconds(),
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    },
    HealthJobErrors: {
      alarmDescription:
        'The health job failed (cannot reach the database, or a statement timed out): its figures are missing. Runbook: docs/operations.md#alarm-healthjoberrors.',
      metric: health.function.metricErrors({ period }),
      threshold: 1,
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    },
    HealthJobNotRunning: {
      alarmDescription:
        'No health check completed in 3 schedule periods (no HealthCheck heartbeat; missing data counts as breaching): the job fails, is throttled or its schedule is disabled, and the alarms on its figures are blind. Runbook: docs/operations.md#alarm-healthjobnotrunning.',
      metric: emf(H.heartbeat, { period }),
      threshold: 1,
      evaluationPeriods: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
    },
  };
}

/**
 * The retention job: errors in two schedule periods in a row.
 *
 * @internal
 *
 * @internal
 */
export function retentionAlarmSpecs(retention: NonNullable<WorkerAlarmsProps['retention']>): AlarmSpecs {
  return {
    RetentionJobErrors: {
      alarmDescription:
        'The retention job failed in two schedule periods in a row (a window shorter than the queue retentions, the database unreachable): settled rows pile up. Runbook: docs/operations.md#alarm-retentionjoberrors.',
      metric: retention.function.metricErrors({ period: retention.schedule }),
      threshold: 1,
      evaluationPeriods: 2,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    },
  };
}

/**
 * The relay: the oldest pending outbox row older than the SLO.
 *
 * @internal
 *
 * @internal
 */
export function outboxAlarmSpecs(pendingAgeSlo: Duration, emf: EmfMetric): AlarmSpecs {
  return {
    OutboxOldestPendingAge: {
      alarmDescription: `The oldest pending outbox row is older than ${pendingAgeSlo.toSeconds()} s: the relay is failing or behind.`,
      metric: emf(WORKER_METRICS.outboxOldestPendingAgeMs, { statistic: cloudwatch.Stats.MAXIMUM }),
      threshold: pendingAgeSlo.toMilliseconds(),
      evaluationPeriods: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    },
  };
}
