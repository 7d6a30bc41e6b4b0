import { Duration } from 'aws-cdk-lib';
import { isToken, type SettingChecks } from '../setting-checks.ts';
import type { WorkerSettings } from '../worker-settings.ts';

/**
 * Checks the alarms' thresholds and that someone reads the alarms (or `alarms: 'none'` says no one does).
 *
 * @internal
 */
export function checkAlarmSettings(
  props: Omit<WorkerSettings, 'vpc'>,
  problems: string[],
  { range, seconds, durationRange }: SettingChecks,
): void {
  const quarantineAgeS = seconds('quarantineAgeAlarm', props.quarantineAgeAlarm ?? Duration.minutes(15));
  durationRange('quarantineAgeAlarm', quarantineAgeS, 60, 7 * 86_400);
  for (const [name, value] of [
    ['retryRatePercent', props.retryRatePercent],
    ['duplicateRatePercent', props.duplicateRatePercent],
    ['transactionConflictRatePercent', props.transactionConflictRatePercent],
  ] as const) {
    if (value !== undefined && !isToken(value) && !(value > 0 && value <= 100)) {
      problems.push(
        `${name} (${value}) must be above 0 and at most 100 (a percent of received records); set a value in that range`,
      );
    }
  }
  range('retryRateEvaluationPeriods', props.retryRateEvaluationPeriods, 1, 288);
  if (props.alarms !== undefined && props.alarms !== 'none') {
    problems.push(
      `alarms ("${String(props.alarms)}") must be 'none' or left out; to send alarms somewhere set alarmEmail or alarmTopic`,
    );
  } else if (props.alarms === 'none' && (props.alarmEmail || props.alarmTopic)) {
    problems.push(
      `alarms is 'none' but ${props.alarmEmail ? 'alarmEmail' : 'alarmTopic'} is set: someone does read the alarms; remove alarms: 'none'`,
    );
  } else if (props.alarms === undefined && !props.alarmEmail && !props.alarmTopic) {
    problems.push(
      "nobody reads the alarms: set alarmEmail (an e-mail subscription to the alarm topic) or alarmTopic (an existing topic with subscribers; alarmTopicArn in cdk.json), or set alarms: 'none' to say on purpose that no one is notified (a dev stage)",
    );
  }
}
