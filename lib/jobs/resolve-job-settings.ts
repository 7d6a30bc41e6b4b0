import { Duration } from 'aws-cdk-lib';
import type { RetentionWindows } from '../resolve-worker-settings.ts';
import { fmtSeconds, type SettingChecks } from '../setting-checks.ts';
import type { WorkerSettings } from '../worker-settings.ts';

/**
 * Checks the schedules of the outbox relay and the health check, and resolves the retention job's windows
 * (undefined when `retention` is false): inbox and effect log rows outlive a message and its DLQ copy.
 * `retentionS` and `dlqRetentionS` are the queues' retention periods in seconds (undefined: a token).
 *
 * @internal
 */
export function resolveJobSettings(
  props: Omit<WorkerSettings, 'vpc'>,
  retentionS: number | undefined,
  dlqRetentionS: number | undefined,
  problems: string[],
  { seconds, durationRange }: SettingChecks,
): RetentionWindows | undefined {
  if (props.outboxRelay !== false) {
    const scheduleS = seconds('outboxRelaySchedule', props.outboxRelaySchedule ?? Duration.minutes(1));
    const maxRunS = seconds('outboxRelayMaxRun', props.outboxRelayMaxRun ?? Duration.seconds(50));
    if (scheduleS !== undefined && (scheduleS < 60 || scheduleS > 3600 || scheduleS % 60 !== 0)) {
      problems.push(
        `outboxRelaySchedule (${fmtSeconds(scheduleS)}) must be whole minutes from 60 s to 3600 s; set a value in that range`,
      );
    }
    if (scheduleS !== undefined && maxRunS !== undefined && (maxRunS < 1 || maxRunS >= scheduleS)) {
      problems.push(
        `outboxRelayMaxRun (${fmtSeconds(maxRunS)}) must be at least 1 s and shorter than outboxRelaySchedule (${fmtSeconds(scheduleS)}) so runs do not overlap; lower outboxRelayMaxRun`,
      );
    }
  }

  if (props.healthCheck !== false) {
    const scheduleS = seconds('healthCheckSchedule', props.healthCheckSchedule ?? Duration.minutes(1));
    if (scheduleS !== undefined && (scheduleS < 60 || scheduleS > 3600 || scheduleS % 60 !== 0)) {
      problems.push(
        `healthCheckSchedule (${fmtSeconds(scheduleS)}) must be whole minutes from 60 s to 3600 s; set a value in that range`,
      );
    }
  }
  let retention: RetentionWindows | undefined;
  if (props.retention !== false) {
    const guard =
      retentionS !== undefined && dlqRetentionS !== undefined ? retentionS + dlqRetentionS : undefined;
    retention = {
      schedule: props.retentionSchedule ?? Duration.hours(1),
      maxRun: props.retentionMaxRun ?? Duration.minutes(4),
      inbox: props.inboxRetention ?? Duration.seconds((guard ?? 18 * 86_400) + 86_400),
      outbox: props.outboxRetention ?? Duration.days(7),
      effectLog:
        props.effectLogRetention ?? props.inboxRetention ?? Duration.seconds((guard ?? 18 * 86_400) + 86_400),
      quarantine: props.quarantineRetention ?? Duration.days(30),
    };
    const scheduleS = seconds('retentionSchedule', retention.schedule);
    const maxRunS = seconds('retentionMaxRun', retention.maxRun);
    if (scheduleS !== undefined && (scheduleS < 300 || scheduleS > 86_400 || scheduleS % 60 !== 0)) {
      problems.push(
        `retentionSchedule (${fmtSeconds(scheduleS)}) must be whole minutes from 300 s to 86400 s; set a value in that range`,
      );
    }
    durationRange('retentionMaxRun', maxRunS, 10, 840);
    if (scheduleS !== undefined && maxRunS !== undefined && maxRunS >= scheduleS) {
      problems.push(
        `retentionMaxRun (${fmtSeconds(maxRunS)}) must be shorter than retentionSchedule (${fmtSeconds(scheduleS)}) so runs do not overlap; lower retentionMaxRun`,
      );
    }
    for (const [name, value] of [
      ['inboxRetention', retention.inbox],
      ['effectLogRetention', retention.effectLog],
    ] as const) {
      const s = seconds(name, value);
      if (s !== undefined && guard !== undefined && s < guard) {
        problems.push(
          `${name} (${fmtSeconds(s)}) must be at least retentionPeriod (${fmtSeconds(retentionS as number)}) + dlqRetentionPeriod (${fmtSeconds(dlqRetentionS as number)}) = ${fmtSeconds(guard)}: a message redriven within that window would find no inbox row and run twice; raise ${name}`,
        );
      }
    }
    durationRange('outboxRetention', seconds('outboxRetention', retention.outbox), 86_400, 315_360_000);
    durationRange(
      'quarantineRetention',
      seconds('quarantineRetention', retention.quarantine),
      86_400,
      315_360_000,
    );
  }
  return retention;
}
