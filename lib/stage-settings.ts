import { Duration } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import type { WorkerSettings } from './worker-settings.ts';

/** Settings a stage may set in `cdk.json` (`context.stages.<name>`); plain JSON values. */
const NUMBER_KEYS = [
  'maxReceiveCount',
  'maxMessageSizeBytes',
  'memorySize',
  'dbPoolSize',
  'recordConcurrency',
  'batchSize',
  'maxConcurrency',
  'minimumPollers',
  'maximumPollers',
  'reservedConcurrency',
  'dbMaxConnections',
  'dbReservedConnections',
  'dbWriteIopsBudget',
  'writeIopsPerMessage',
  'downstreamRateLimit',
  'callsPerMessage',
  'lockContentionSafeParallelism',
  'proxyMaxConnectionsPercent',
  'allocatedStorageGiB',
  'terminalFailureRatePercent',
  'connectionsAlarmPercent',
  'retryRatePercent',
  'retryRateEvaluationPeriods',
  'duplicateRatePercent',
  'maxPayloadBytes',
  'breakerFailureThreshold',
  'breakerHalfOpenConcurrency',
  'concurrencyFloor',
  // The DynamoDB store's capacity and alarm inputs (with "store": "dynamodb").
  'maxWriteUnitsPerSecond',
  'transactItemsPerMessage',
  'itemSizeKb',
  'recordLatencyMs',
  'transactionConflictRatePercent',
  // runtime "fargate"
  'minTasks',
  'maxTasks',
  'taskCpu',
  'taskMemoryMiB',
] as const;
const BOOLEAN_KEYS = [
  'production',
  'fifo',
  'multiAz',
  'deletionProtection',
  'outboxRelay',
  'acknowledgeQueueReplacement',
  'reserveConcurrency',
  'healthCheck',
  'retention',
  'payloadBucket',
  'breaker',
  'adaptiveConcurrency',
  'tracing',
] as const;
const STRING_KEYS = [
  'consumer',
  'serviceName',
  'metricsNamespace',
  'databaseName',
  'workerDbUser',
  'relayDbUser',
  'opsDbUser',
  'healthDbUser',
  'retentionDbUser',
  'alarmEmail',
  'alarms',
  'dashboardName',
  'terminalPolicy',
  'commitMode',
  // Your worker entry file, relative to the folder of cdk.json (checked to exist at synth).
  'workerEntry',
  'scalingMode',
  // "postgres" (default) or "dynamodb": the stack then builds no VPC and no database.
  'store',
  // "lambda" (default) or "fargate": the poller as an ECS Fargate service.
  'runtime',
] as const;
const SECONDS_KEYS = {
  visibilityTimeoutSeconds: 'visibilityTimeout',
  retentionPeriodSeconds: 'retentionPeriod',
  dlqRetentionPeriodSeconds: 'dlqRetentionPeriod',
  timeoutSeconds: 'timeout',
  maxBatchingWindowSeconds: 'maxBatchingWindow',
  backupRetentionSeconds: 'backupRetention',
  secretRotationIntervalSeconds: 'secretRotationInterval',
  outboxRelayScheduleSeconds: 'outboxRelaySchedule',
  outboxRelayMaxRunSeconds: 'outboxRelayMaxRun',
  oldestMessageAgeSloSeconds: 'oldestMessageAgeSlo',
  outboxPendingAgeSloSeconds: 'outboxPendingAgeSlo',
  healthCheckScheduleSeconds: 'healthCheckSchedule',
  quarantineAgeAlarmSeconds: 'quarantineAgeAlarm',
  retentionScheduleSeconds: 'retentionSchedule',
  retentionMaxRunSeconds: 'retentionMaxRun',
  inboxRetentionSeconds: 'inboxRetention',
  outboxRetentionSeconds: 'outboxRetention',
  effectLogRetentionSeconds: 'effectLogRetention',
  quarantineRetentionSeconds: 'quarantineRetention',
  payloadVersionRetentionSeconds: 'payloadVersionRetention',
  breakerCheckIntervalSeconds: 'breakerCheckInterval',
  breakerMinOpenSeconds: 'breakerMinOpen',
  breakerHalfOpenSeconds: 'breakerHalfOpen',
  pollerWaitTimeSeconds: 'pollerWaitTime',
  pollerVisibilitySeconds: 'pollerVisibility',
  pollerStopTimeoutSeconds: 'pollerStopTimeout',
  pollerMaxExtensionSeconds: 'pollerMaxExtension',
} as const;

/**
 * Construct props from a stage, plus `alarmTopicArn`: an existing SNS topic (with its subscribers) that
 * receives the alarms; the stack imports it as `alarmTopic`.
 */
export type StageProps = Omit<WorkerSettings, 'vpc'> & { readonly alarmTopicArn?: string };

/**
 * Turns the JSON settings of one stage (`cdk.json` → `context.stages.<stage>`) into construct props.
 * Durations are given in seconds (`timeoutSeconds`), the instance class as `"r6g.large"`; `workerEnvironment`
 * is an object of strings, `domainKeyPrefixes` a list of strings, `queueIdentity` an object `{"fifo", "queueLogicalId", "deadLetterQueueLogicalId"}`. Unknown keys and wrong types are errors naming the key, so a typo cannot silently
 * fall back to a default.
 *
 * @throws Error listing every unknown or mistyped key.
 */
export function stageSettings(stage: string, raw: unknown): StageProps {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new Error(
      `Stage "${stage}" is not defined in cdk.json context "stages"; add it or pass -c stage=<name> of an existing one`,
    );
  }
  const props: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [key, value] of Object.entries(raw)) {
    if (value === null) continue;
    const expect = (type: string, ok: boolean) => {
      if (!ok) problems.push(`stages.${stage}.${key} must be a ${type} (given ${JSON.stringify(value)})`);
      return ok;
    };
    if ((NUMBER_KEYS as readonly string[]).includes(key)) {
      if (expect('number', typeof value === 'number')) props[key] = value;
    } else if ((BOOLEAN_KEYS as readonly string[]).includes(key)) {
      if (expect('boolean', typeof value === 'boolean')) props[key] = value;
    } else if ((STRING_KEYS as readonly string[]).includes(key)) {
      if (expect('string', typeof value === 'string')) props[key] = value;
    } else if (key in SECONDS_KEYS) {
      if (expect('number of seconds', typeof value === 'number')) {
        props[SECONDS_KEYS[key as keyof typeof SECONDS_KEYS]] = Duration.seconds(value as number);
      }
    } else if (key === 'instanceType') {
      if (
        expect('string like "r6g.large"', typeof value === 'string' && /^[a-z0-9]+\.[a-z0-9]+$/.test(value))
      ) {
        props.instanceType = new ec2.InstanceType(value as string);
      }
    } else if (key === 'queueIdentity') {
      const ok =
        typeof value === 'object' &&
        !Array.isArray(value) &&
        Object.keys(value).sort().join() === 'deadLetterQueueLogicalId,fifo,queueLogicalId' &&
        typeof value.fifo === 'boolean' &&
        typeof value.queueLogicalId === 'string' &&
        typeof value.deadLetterQueueLogicalId === 'string';
      if (
        expect(
          'JSON object {"fifo": boolean, "queueLogicalId": string, "deadLetterQueueLogicalId": string}',
          ok,
        )
      ) {
        props.queueIdentity = value;
      }
    } else if (key === 'alarmTopicArn') {
      if (
        expect(
          'SNS topic ARN like "arn:aws:sns:eu-west-1:123456789012:oncall"',
          typeof value === 'string' &&
            /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$/.test(value),
        )
      ) {
        props.alarmTopicArn = value;
      }
    } else if (key === 'domainKeyPrefixes') {
      // The DynamoDB worker's domain item prefixes: ["ORDER#", "CUSTOMER#"].
      const ok = Array.isArray(value) && value.every((v) => typeof v === 'string');
      if (expect('list of strings like ["ORDER#"]', ok)) props.domainKeyPrefixes = value;
    } else if (key === 'workerEnvironment') {
      const ok =
        typeof value === 'object' &&
        !Array.isArray(value) &&
        Object.values(value).every((v) => typeof v === 'string');
      if (expect('object of strings', ok)) props.workerEnvironment = value;
    } else {
      problems.push(
        `stages.${stage}.${key} is not a known setting; see the construct props table in docs/deploy.md`,
      );
    }
  }
  if (problems.length > 0) throw new Error(`Invalid stage settings:\n- ${problems.join('\n- ')}`);
  return props as StageProps;
}
