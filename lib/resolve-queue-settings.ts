import { Duration } from 'aws-cdk-lib';
import { fmtSeconds, isToken, type SettingChecks } from './setting-checks.ts';
import type { WorkerSettings } from './worker-settings.ts';

/** The queues' and the batches' settings after defaults, with the durations in seconds the later rules need. */
export interface QueueSettings {
  readonly fifo: boolean;
  readonly timeout: Duration;
  readonly maxBatchingWindow: Duration;
  readonly batchSize: number;
  readonly retentionPeriod: Duration;
  readonly dlqRetentionPeriod: Duration;
  /** `retentionPeriod` in seconds (undefined: a token, or reported). */
  readonly retentionS: number | undefined;
  /** `dlqRetentionPeriod` in seconds (undefined: a token, or reported). */
  readonly dlqRetentionS: number | undefined;
  readonly maxReceiveCount: number;
  readonly maxMessageSizeBytes: number;
  readonly visibilityTimeout: Duration;
  readonly payloadVersionRetention: Duration;
}

const DAY = 86_400;

/**
 * The source queue, its DLQ and the batches: defaults, ranges, the visibility timeout against the function's
 * timeout, the receive count, the DLQ's retention against the queue's, the payload versions' lifetime against
 * both, and FIFO's batching limits. Each problem goes to `problems`, naming the value and the fix.
 *
 * @internal
 */
export function resolveQueueSettings(
  props: Omit<WorkerSettings, 'vpc'>,
  fargate: boolean,
  checks: SettingChecks,
  problems: string[],
): QueueSettings {
  const { range, seconds, durationRange } = checks;
  const fifo = props.fifo ?? false;
  const timeout = props.timeout ?? Duration.seconds(30);
  const maxBatchingWindow = props.maxBatchingWindow ?? Duration.seconds(0);
  const batchSize = props.batchSize ?? 10;
  const retentionPeriod = props.retentionPeriod ?? Duration.days(4);
  const dlqRetentionPeriod = props.dlqRetentionPeriod ?? Duration.days(14);
  const maxReceiveCount = props.maxReceiveCount ?? 10;
  const maxMessageSizeBytes = props.maxMessageSizeBytes ?? 1_048_576;

  const timeoutS = seconds('timeout', timeout);
  const windowS = seconds('maxBatchingWindow', maxBatchingWindow);
  const retentionS = seconds('retentionPeriod', retentionPeriod);
  const dlqRetentionS = seconds('dlqRetentionPeriod', dlqRetentionPeriod);
  durationRange('timeout', timeoutS, 1, 900);
  durationRange('maxBatchingWindow', windowS, 0, 300);
  durationRange('retentionPeriod', retentionS, 60, 1_209_600);
  durationRange('dlqRetentionPeriod', dlqRetentionS, 60, 1_209_600);
  range('batchSize', batchSize, 1, 10_000);
  range('maxMessageSizeBytes', maxMessageSizeBytes, 1024, 1_048_576, ' bytes');

  const visibilityTimeout = resolveVisibilityTimeout(props, { fargate, timeoutS, windowS }, checks, problems);
  checkReceivesAndRetention(maxReceiveCount, retentionS, dlqRetentionS, range, problems);
  const payloadVersionRetention = resolvePayloadVersionRetention(
    props,
    retentionS,
    dlqRetentionS,
    checks,
    problems,
  );
  checkBatching({ fifo, fargate, batchSize, windowS }, problems);
  return {
    fifo,
    timeout,
    maxBatchingWindow,
    batchSize,
    retentionPeriod,
    dlqRetentionPeriod,
    retentionS,
    dlqRetentionS,
    maxReceiveCount,
    maxMessageSizeBytes,
    visibilityTimeout,
    payloadVersionRetention,
  };
}

/**
 * Visibility timeout ≥ 6 × function timeout + batching window (AWS's advice for SQS event sources): a record must
 * not reappear while the invocation that holds it can still be running or retried by Lambda. With runtime
 * "fargate" the poller's lease sets it (`resolvePollerSettings`).
 */
function resolveVisibilityTimeout(
  props: Omit<WorkerSettings, 'vpc'>,
  values: { fargate: boolean; timeoutS: number | undefined; windowS: number | undefined },
  checks: SettingChecks,
  problems: string[],
): Duration {
  const { fargate, timeoutS, windowS } = values;
  const requiredVisibility =
    !fargate && timeoutS !== undefined && windowS !== undefined ? 6 * timeoutS + windowS : undefined;
  const visibilityTimeout =
    props.visibilityTimeout ?? (fargate ? (props.pollerVisibility ?? Duration.seconds(60)) : undefined);
  if (visibilityTimeout === undefined) {
    if ((props.timeout?.isUnresolved() ?? false) || (props.maxBatchingWindow?.isUnresolved() ?? false)) {
      problems.push(
        'timeout or maxBatchingWindow is a deploy-time token, so visibilityTimeout has no default; set visibilityTimeout',
      );
    }
    return Duration.seconds(requiredVisibility ?? 900 * 6);
  }
  const visibilityS = checks.seconds('visibilityTimeout', visibilityTimeout);
  if (visibilityS !== undefined && requiredVisibility !== undefined && visibilityS < requiredVisibility) {
    problems.push(
      `visibilityTimeout (${fmtSeconds(visibilityS)}) must be at least 6 × function timeout (${fmtSeconds(timeoutS as number)}) + maxBatchingWindow (${fmtSeconds(windowS as number)}) = ${fmtSeconds(requiredVisibility)}; raise visibilityTimeout or lower the function timeout`,
    );
  }
  checks.durationRange('visibilityTimeout', visibilityS, 0, 43_200);
  return visibilityTimeout;
}

/** The receives before the DLQ, and the DLQ outliving the queue (a message keeps its enqueue time there). */
function checkReceivesAndRetention(
  maxReceiveCount: number,
  retentionS: number | undefined,
  dlqRetentionS: number | undefined,
  range: SettingChecks['range'],
  problems: string[],
): void {
  // One message per value: a whole number below 5 (0 included) gets the reason, anything else the range.
  if (!isToken(maxReceiveCount) && Number.isInteger(maxReceiveCount) && maxReceiveCount < 5) {
    problems.push(
      `maxReceiveCount (${maxReceiveCount}) must be at least 5 so a transient failure or a backoff does not send a message to the DLQ; raise maxReceiveCount`,
    );
  } else {
    range('maxReceiveCount', maxReceiveCount, 5, 1000);
  }
  if (retentionS !== undefined && dlqRetentionS !== undefined && dlqRetentionS <= retentionS) {
    problems.push(
      `dlqRetentionPeriod (${fmtSeconds(dlqRetentionS)}) must be longer than retentionPeriod (${fmtSeconds(retentionS)}): a message keeps its original enqueue time in the DLQ and would expire there early; raise dlqRetentionPeriod or lower retentionPeriod`,
    );
  }
}

/** A message (and its DLQ copy) must never outlive the payload object version it refers to. */
function resolvePayloadVersionRetention(
  props: Omit<WorkerSettings, 'vpc'>,
  retentionS: number | undefined,
  dlqRetentionS: number | undefined,
  checks: SettingChecks,
  problems: string[],
): Duration {
  const minPayloadDays =
    retentionS !== undefined && dlqRetentionS !== undefined
      ? Math.ceil((retentionS + dlqRetentionS) / DAY)
      : undefined;
  if (props.payloadVersionRetention === undefined) return Duration.days(minPayloadDays ?? 28);
  const payloadS = checks.seconds('payloadVersionRetention', props.payloadVersionRetention);
  if (payloadS !== undefined && payloadS % DAY !== 0) {
    problems.push(
      `payloadVersionRetention (${fmtSeconds(payloadS)}) must be whole days (S3 lifecycle counts days); round it up`,
    );
  } else if (payloadS !== undefined && minPayloadDays !== undefined && payloadS / DAY < minPayloadDays) {
    problems.push(
      `payloadVersionRetention (${payloadS / DAY} days) must be at least retentionPeriod + dlqRetentionPeriod (${fmtSeconds(retentionS as number)} + ${fmtSeconds(dlqRetentionS as number)}, ${minPayloadDays} days rounded up): a message or its DLQ copy would outlive the payload version it refers to and fail PAYLOAD_NOT_FOUND; raise payloadVersionRetention to ${minPayloadDays} days or more`,
    );
    return Duration.days(minPayloadDays);
  }
  return props.payloadVersionRetention;
}

/** FIFO's batching limits, and the batching window a batch above 10 records needs on Lambda. */
function checkBatching(
  values: { fifo: boolean; fargate: boolean; batchSize: number; windowS: number | undefined },
  problems: string[],
): void {
  const { fifo, fargate, batchSize, windowS } = values;
  if (fifo && !isToken(batchSize) && batchSize > 10) {
    problems.push(
      `batchSize (${batchSize}) must be at most 10 for a FIFO queue; lower batchSize to 10 or less`,
    );
  }
  if (fifo && windowS !== undefined && windowS > 0) {
    problems.push(
      `maxBatchingWindow (${fmtSeconds(windowS)}) must be 0 s for a FIFO queue (Lambda does not batch FIFO records over time); remove maxBatchingWindow`,
    );
  }
  if (!fargate && !fifo && !isToken(batchSize) && batchSize > 10 && windowS !== undefined && windowS < 1) {
    problems.push(
      `maxBatchingWindow (${fmtSeconds(windowS)}) must be at least 1 s when batchSize (${batchSize}) is above 10; set maxBatchingWindow or lower batchSize to 10`,
    );
  }
}
