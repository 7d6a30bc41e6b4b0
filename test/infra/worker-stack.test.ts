import { App, Stack } from 'aws-cdk-lib';
import { Annotations, Capture, Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { WORKER_METRICS } from '../../lib/observability/worker-metrics.ts';
import { SqsInboxWorkerStack, type SqsInboxWorkerStackProps } from '../../lib/sqs-inbox-worker-stack.ts';

// Bundling is skipped here (`aws:cdk:bundling-stacks: []`): the function settings still reach the
// template, and test/infra/bundle-worker.test.ts bundles for real. Each stack is synthesized once per file.
const noBundling = { 'aws:cdk:bundling-stacks': [] };

/** Synthesizes a stack; without a reader given, `alarms: 'none'` (the reader rule has its own tests). */
function synth(id: string, worker: SqsInboxWorkerStackProps['worker'] = {}) {
  const app = new App({ context: noBundling });
  const reader = worker.alarmEmail || worker.alarmTopic || worker.alarmTopicArn || 'alarms' in worker;
  const stack = new SqsInboxWorkerStack(app, id, {
    worker: reader ? worker : { alarms: 'none', ...worker },
  });
  return { app, stack, template: Template.fromStack(stack) };
}

/** The identity of the queues of a worker with the id `Worker` (`queueIdentity`), as first deployed. */
const DEPLOYED_QUEUES = {
  fifo: false,
  queueLogicalId: 'WorkerQueue9380F652',
  deadLetterQueueLogicalId: 'WorkerDeadLetterQueue2879C389',
} as const;

const logicalIdOf = (template: Template, type: string, props: Record<string, unknown>): string => {
  const found = Object.keys(template.findResources(type, { Properties: Match.objectLike(props) }));
  expect(found, `${type} matching ${JSON.stringify(props)}`).toHaveLength(1);
  return found[0];
};

describe('Class: SqsInboxWorkerStack (default, production)', () => {
  let stack: SqsInboxWorkerStack;
  let app: App;
  let template: Template;
  beforeAll(() => {
    ({ app, stack, template } = synth('Default', { queueIdentity: DEPLOYED_QUEUES }));
  });

  it('synthesizes with no error annotations and names the binding capacity constraint', () => {
    Annotations.fromStack(stack).hasNoError('*', Match.anyValue());
    Annotations.fromStack(stack).hasInfo(
      '/Default/Worker',
      Match.stringLikeRegexp(
        '^safe worker concurrency 70, bound by db_connections .*maxConcurrency 70 \\(derived\\)',
      ),
    );
  });

  it('passes cdk-nag AwsSolutions with zero unacknowledged findings', () => {
    // Act
    const report = new AwsSolutionsChecks(app).validateScope(app);

    // Assess
    const findings = report.violations.map(
      (v) => `${v.ruleName}: ${v.violatingResources.map((r) => r.constructPath).join(', ')}`,
    );
    expect(findings).toEqual([]);
    expect(report.success).toBe(true);
  });

  it('is a live check: an unprotected queue is reported', () => {
    // Prepare: a queue without TLS enforcement and without a DLQ
    const probe = new App();
    new sqs.Queue(new Stack(probe, 'Probe'), 'Plain', { enforceSSL: false });

    // Act
    const report = new AwsSolutionsChecks(probe).validateScope(probe);

    // Assess
    expect(report.violations.map((v) => v.ruleName)).toEqual(
      expect.arrayContaining(['AwsSolutions-SQS3', 'AwsSolutions-SQS4']),
    );
  });

  it('links the source queue to its DLQ with maxReceiveCount, SSE, TLS-only and explicit sizes', () => {
    // Prepare
    const dlqRef = new Capture();
    template.hasResourceProperties('AWS::SQS::Queue', {
      VisibilityTimeout: 180,
      MessageRetentionPeriod: 345_600,
      MaximumMessageSize: 1_048_576,
      SqsManagedSseEnabled: true,
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [dlqRef, 'Arn'] }, maxReceiveCount: 10 },
    });

    // Assess: the captured DLQ keeps messages longer, is encrypted and has a TLS-only policy
    const dlq = template.toJSON().Resources[dlqRef.asString()];
    expect(dlq.Type).toBe('AWS::SQS::Queue');
    expect(dlq.Properties).toMatchObject({
      MessageRetentionPeriod: 1_209_600,
      SqsManagedSseEnabled: true,
      MaximumMessageSize: 1_048_576,
    });
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      Queues: [{ Ref: dlqRef.asString() }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it('wires the event source mapping from the source queue to the worker function', () => {
    // Prepare
    const queueRef = new Capture();
    const functionRef = new Capture();
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [queueRef, 'Arn'] },
      FunctionName: { Ref: functionRef },
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 70 },
      MetricsConfig: { Metrics: ['EventCount'] },
    });

    // Assess
    const resources = template.toJSON().Resources;
    expect(resources[queueRef.asString()].Properties.RedrivePolicy).toBeDefined();
    const worker = resources[functionRef.asString()];
    expect(worker.Properties).toMatchObject({
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      Handler: 'index.handler',
      Timeout: 30,
      MemorySize: 512,
      ReservedConcurrentExecutions: 70,
      Environment: {
        Variables: {
          DB_AUTH: 'iam',
          DB_USER: 'sqs_worker',
          DB_NAME: 'worker',
          DB_PORT: '5432',
          DB_SSL: 'true',
          DB_POOL_SIZE: '1',
          WORKER_CONSUMER: 'case-worker',
          WORKER_RECORD_CONCURRENCY: '1',
          WORKER_TERMINAL_POLICY: 'quarantine',
          POWERTOOLS_SERVICE_NAME: 'sqs-inbox-worker',
          POWERTOOLS_METRICS_NAMESPACE: WORKER_METRICS.defaultNamespace,
          NODE_OPTIONS: '--enable-source-maps',
        },
      },
    });
    expect(worker.Properties.VpcConfig.SubnetIds).toHaveLength(2);
    // Through the proxy: its ACM certificate chains to Node's default CAs, no extra bundle to load at cold start.
    expect(worker.Properties.Environment.Variables.NODE_EXTRA_CA_CERTS).toBeUndefined();
    const proxyId = logicalIdOf(template, 'AWS::RDS::DBProxy', { EngineFamily: 'POSTGRESQL' });
    expect(worker.Properties.Environment.Variables.DB_HOST).toEqual({ 'Fn::GetAtt': [proxyId, 'Endpoint'] });
  });

  it('lets each function connect through the proxy as its own database user only, and the proxy as every user', () => {
    // Prepare: the database users each IAM role may sign tokens for, by the role's logical id.
    const usersByRole = new Map<string, string[]>();
    for (const policy of Object.values(template.findResources('AWS::IAM::Policy'))) {
      const users = (policy.Properties.PolicyDocument.Statement as { Action: unknown; Resource: unknown }[])
        .filter((statement) => statement.Action === 'rds-db:connect')
        .flatMap((statement) =>
          Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource],
        )
        .map((resource) => {
          const parts = (resource as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
          return String(parts.at(-1)).replace(/^\//, '');
        });
      for (const role of policy.Properties.Roles as { Ref: string }[]) {
        usersByRole.set(role.Ref, [...(usersByRole.get(role.Ref) ?? []), ...users]);
      }
    }
    const usersOf = (pattern: RegExp) =>
      [...usersByRole.entries()].filter(([role]) => pattern.test(role)).flatMap(([, users]) => users.sort());

    // Assess
    expect(usersOf(/^WorkerWorkerFunctionServiceRole/)).toEqual(['sqs_worker']);
    expect(usersOf(/^WorkerJobsOutboxRelayFunctionServiceRole/)).toEqual(['sqs_outbox_relay']);
    expect(usersOf(/^WorkerMigrationFunctionServiceRole/)).toEqual([]);
    expect(usersOf(/^WorkerJobsHealthFunctionServiceRole/)).toEqual(['sqs_worker_health']);
    expect(usersOf(/^WorkerJobsRetentionFunctionServiceRole/)).toEqual(['sqs_worker_retention']);
    expect(usersOf(/^WorkerDatabaseProxyRole/)).toEqual([
      'sqs_outbox_relay',
      'sqs_worker',
      'sqs_worker_health',
      'sqs_worker_ops',
      'sqs_worker_retention',
    ]);
  });

  it('creates RDS PostgreSQL encrypted, multi-AZ, deletion-protected, backed up, IAM-enabled, TLS forced', () => {
    template.hasResource('AWS::RDS::DBInstance', {
      DeletionPolicy: 'Snapshot',
      Properties: Match.objectLike({
        Engine: 'postgres',
        StorageEncrypted: true,
        MultiAZ: true,
        DeletionProtection: true,
        BackupRetentionPeriod: 14,
        EnableIAMDatabaseAuthentication: true,
        PubliclyAccessible: false,
        DBInstanceClass: 'db.r6g.large',
      }),
    });
    template.hasResourceProperties('AWS::RDS::DBParameterGroup', {
      Parameters: Match.objectLike({ 'rds.force_ssl': '1' }),
    });
    template.hasResourceProperties('AWS::SecretsManager::RotationSchedule', {
      RotationRules: { ScheduleExpression: 'rate(30 days)' },
    });
  });

  it('keeps the source queue and the DLQ, and snapshots the database, when removed or replaced', () => {
    // Prepare
    const dlqRef = new Capture();
    template.hasResource('AWS::SQS::Queue', {
      Properties: Match.objectLike({
        RedrivePolicy: Match.objectLike({ deadLetterTargetArn: { 'Fn::GetAtt': [dlqRef, 'Arn'] } }),
      }),
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });

    // Assess: the captured DLQ is retained too, and the database leaves a final snapshot
    const dlq = template.toJSON().Resources[dlqRef.asString()];
    expect(dlq).toMatchObject({
      Type: 'AWS::SQS::Queue',
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
    template.hasResource('AWS::RDS::DBInstance', {
      DeletionPolicy: 'Snapshot',
      UpdateReplacePolicy: 'Snapshot',
    });
  });

  it('fronts the database with an RDS Proxy: end-to-end IAM auth, TLS required, capacity-derived pool', () => {
    template.hasResourceProperties('AWS::RDS::DBProxy', {
      EngineFamily: 'POSTGRESQL',
      RequireTLS: true,
      DefaultAuthScheme: 'IAM_AUTH',
    });
    // ⌈100 × (70 workers × 1 connection + 3: relay, migration, breaker) / 80⌉ = 92
    template.hasResourceProperties('AWS::RDS::DBProxyTargetGroup', {
      ConnectionPoolConfigurationInfo: Match.objectLike({ MaxConnectionsPercent: 92 }),
    });
  });

  it('builds an isolated VPC with flow logs, SQS and Secrets Manager endpoints, and an S3 gateway for payload objects', () => {
    template.resourceCountIs('AWS::EC2::NatGateway', 0);
    template.resourceCountIs('AWS::EC2::InternetGateway', 0);
    template.hasResourceProperties('AWS::EC2::FlowLog', { TrafficType: 'ALL', ResourceType: 'VPC' });
    for (const service of ['sqs', 'secretsmanager']) {
      template.hasResourceProperties('AWS::EC2::VPCEndpoint', {
        VpcEndpointType: 'Interface',
        PrivateDnsEnabled: true,
        ServiceName: Match.objectLike({ 'Fn::Join': ['', Match.arrayWith([`.${service}`])] }),
      });
    }
    // The worker reads payloadRef objects and the relay offloads them from subnets without internet.
    template.hasResourceProperties('AWS::EC2::VPCEndpoint', {
      VpcEndpointType: 'Gateway',
      ServiceName: Match.objectLike({
        'Fn::Join': ['', Match.arrayWith([Match.stringLikeRegexp('\\.s3$')])],
      }),
    });
  });

  it('applies migrations on deploy with a trigger that runs before the worker', () => {
    const handlerRef = new Capture();
    template.hasResourceProperties('Custom::Trigger', {
      HandlerArn: { Ref: handlerRef },
    });
    const version = template.toJSON().Resources[handlerRef.asString()];
    expect(version.Type).toBe('AWS::Lambda::Version');
    const migrateId = version.Properties.FunctionName.Ref as string;
    expect(template.toJSON().Resources[migrateId].Properties.Environment.Variables).toMatchObject({
      MIGRATIONS_DIR: 'migrations',
      WORKER_DB_USER: 'sqs_worker',
      RELAY_DB_USER: 'sqs_outbox_relay',
      OPS_DB_USER: 'sqs_worker_ops',
      // The worker's and the relay's timeouts, set as their roles' defaults by the migration function.
      DB_STATEMENT_TIMEOUT_MS: '15000',
      DB_LOCK_TIMEOUT_MS: '5000',
      DB_SSL: 'true',
      // Direct to the instance: its certificate is verified against the runtime's Amazon CAs (RDS included).
      NODE_EXTRA_CA_CERTS: '/var/runtime/ca-cert.pem',
    });
    const triggerId = Object.keys(template.findResources('Custom::Trigger'))[0];
    template.hasResource('AWS::Lambda::Function', {
      Properties: Match.objectLike({ Description: 'SQS → PostgreSQL inbox worker' }),
      DependsOn: Match.arrayWith([triggerId]),
    });
  });

  it('schedules the outbox relay with a bounded run time', () => {
    const relayRef = new Capture();
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [relayRef, 'Arn'] } })],
    });
    const relay = template.toJSON().Resources[relayRef.asString()];
    expect(relay.Properties.Timeout).toBe(60);
    expect(relay.Properties.ReservedConcurrentExecutions).toBe(1);
    expect(relay.Properties.Environment.Variables).toMatchObject({
      OUTBOX_RUN_GUARD_MS: '10000',
      DB_AUTH: 'iam',
      DB_USER: 'sqs_outbox_relay',
    });
    expect(relay.Properties.Environment.Variables.OUTBOX_QUEUE_URL).toEqual({ Ref: expect.any(String) });
  });

  it('sends every alarm to the encrypted alarm topic', () => {
    // Prepare
    const topicRef = new Capture();
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateNumberOfMessagesVisible',
      AlarmActions: [{ Ref: topicRef }],
    });

    // Assess: the captured action is the KMS-encrypted topic, and every alarm notifies it on ALARM and OK
    const topicId = logicalIdOf(template, 'AWS::SNS::Topic', { DisplayName: 'sqs-inbox-worker alarms' });
    expect(topicRef.asString()).toBe(topicId);
    expect(template.toJSON().Resources[topicId].Properties.KmsMasterKeyId).toBeDefined();
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'));
    expect(Object.keys(stack.worker.alarms).sort()).toEqual(
      [
        'DlqNotEmpty',
        'OldestMessageAge',
        'FunctionErrors',
        'FunctionThrottles',
        'DurationNearTimeout',
        'HashMismatch',
        'QuarantineFailed',
        'TerminalFailureRate',
        'ProxyClientConnections',
        'ProxyDatabaseConnections',
        'DatabaseConnections',
        'OutboxOldestPendingAge',
        'RetryRate',
        'DuplicateRateSpike',
        'QuarantineAge',
        'LockWaits',
        'Deadlocks',
        'InFlightAge',
        'HealthJobErrors',
        'HealthJobNotRunning',
        'RetentionJobErrors',
        'PayloadAccessDenied',
        'ConcurrencyAtFloor',
        'BreakerOpened',
      ].sort(),
    );
    expect(alarms).toHaveLength(24);
    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual([{ Ref: topicId }]);
      expect(alarm.Properties.OKActions).toEqual([{ Ref: topicId }]);
    }
  });

  it('lets CloudWatch alarms of this account publish to the alarm topic, over TLS only', () => {
    // Prepare
    const topicId = logicalIdOf(template, 'AWS::SNS::Topic', { DisplayName: 'sqs-inbox-worker alarms' });
    const policyTopic = new Capture();

    // Act / Assess: one policy holds both statements (a topic policy replaces the default one)
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      Topics: [{ Ref: policyTopic }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 'sns:Publish',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
          {
            Sid: 'AllowCloudWatchAlarmsToPublish',
            Effect: 'Allow',
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: 'sns:Publish',
            Resource: { Ref: topicId },
            Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
          },
        ]),
      },
    });
    expect(policyTopic.asString()).toBe(topicId);
    template.resourceCountIs('AWS::SNS::TopicPolicy', 1);
  });

  it('lets CloudWatch alarms of this account use the key that encrypts the alarm topic', () => {
    // Prepare
    const keyRef = new Capture();
    template.hasResourceProperties('AWS::SNS::Topic', {
      DisplayName: 'sqs-inbox-worker alarms',
      KmsMasterKeyId: { 'Fn::GetAtt': [keyRef, 'Arn'] },
    });

    // Assess: the key of that topic allows CloudWatch only with the account condition, and nowhere without it
    const key = template.toJSON().Resources[keyRef.asString()];
    expect(key.Type).toBe('AWS::KMS::Key');
    const cloudWatchStatements = key.Properties.KeyPolicy.Statement.filter(
      (s: { Principal?: { Service?: string } }) => s.Principal?.Service === 'cloudwatch.amazonaws.com',
    );
    expect(cloudWatchStatements).toEqual([
      {
        Sid: 'AllowCloudWatchAlarmsToUseTheKey',
        Effect: 'Allow',
        Principal: { Service: 'cloudwatch.amazonaws.com' },
        Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        Resource: '*',
        Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
      },
    ]);
  });

  it.each([
    ['DLQ has messages', { MetricName: 'ApproximateNumberOfMessagesVisible', Threshold: 1 }],
    ['oldest message age above the SLO', { MetricName: 'ApproximateAgeOfOldestMessage', Threshold: 300 }],
    ['function errors', { MetricName: 'Errors', Namespace: 'AWS/Lambda' }],
    ['throttles', { MetricName: 'Throttles', Namespace: 'AWS/Lambda' }],
    [
      'duration p99 above 80 % of the timeout',
      { MetricName: 'Duration', ExtendedStatistic: 'p99', Threshold: 24_000 },
    ],
    [
      'HashMismatch > 0',
      {
        MetricName: 'HashMismatch',
        Namespace: WORKER_METRICS.defaultNamespace,
        Dimensions: [{ Name: WORKER_METRICS.dimension, Value: 'sqs-inbox-worker' }],
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
      },
    ],
    ['proxy client connections', { MetricName: 'ClientConnections', Namespace: 'AWS/RDS' }],
    [
      'proxy database connections',
      { MetricName: 'DatabaseConnections', Dimensions: [Match.objectLike({ Name: 'ProxyName' })] },
    ],
    [
      'database connections (80 % of 80)',
      {
        MetricName: 'DatabaseConnections',
        Threshold: 64,
        Dimensions: [Match.objectLike({ Name: 'DBInstanceIdentifier' })],
      },
    ],
    [
      'outbox oldest pending age',
      {
        MetricName: WORKER_METRICS.outboxOldestPendingAgeMs,
        Namespace: WORKER_METRICS.defaultNamespace,
        Threshold: 300_000,
      },
    ],
  ])('alarms on %s', (_name, props) => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', props);
  });

  it.each([
    [
      'an open quarantine entry older than 15 minutes',
      {
        MetricName: WORKER_METRICS.health.quarantineOldestOpenAgeMs,
        Statistic: 'Maximum',
        Threshold: 900_000,
      },
    ],
    [
      'lock waits at 3 checks in a row',
      {
        MetricName: WORKER_METRICS.health.lockWaits,
        Threshold: 1,
        EvaluationPeriods: 3,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      },
    ],
    [
      'any deadlock',
      {
        MetricName: WORKER_METRICS.health.deadlocks,
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
      },
    ],
    [
      'a message in flight longer than the visibility timeout (180 s)',
      { MetricName: WORKER_METRICS.health.inboxOldestInFlightAgeMs, Threshold: 180_000 },
    ],
    [
      'the health job not running (missing data breaches)',
      {
        MetricName: WORKER_METRICS.health.heartbeat,
        Threshold: 1,
        ComparisonOperator: 'LessThanThreshold',
        TreatMissingData: 'breaching',
        Period: 60,
      },
    ],
  ])('alarms on %s, notifying the topic', (_name, props) => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      ...props,
      Namespace: WORKER_METRICS.defaultNamespace,
      Dimensions: [{ Name: WORKER_METRICS.dimension, Value: 'sqs-inbox-worker' }],
      AlarmActions: [{ Ref: Match.anyValue() }],
    });
  });

  it('alarms on the health job failing, on its own function', () => {
    const fnRef = new Capture();
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Errors',
      Namespace: 'AWS/Lambda',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: fnRef } }],
      AlarmDescription: Match.stringLikeRegexp('health job failed'),
      AlarmActions: [{ Ref: Match.anyValue() }],
    });
    expect(template.toJSON().Resources[fnRef.asString()].Properties.Description).toMatch(/health figures/);
  });

  it.each([
    ['retry rate above 10 % for 3 periods', 'RetryableFailure', 10, 3],
    ['duplicate rate spike above 20 %', 'Duplicate', 20, 1],
  ])('alarms on the %s with metric math over the EMF metrics', (_name, metric, threshold, periods) => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Threshold: threshold,
      EvaluationPeriods: periods,
      AlarmActions: [{ Ref: Match.anyValue() }],
      Metrics: Match.arrayWith([
        Match.objectLike({ Expression: Match.stringLikeRegexp(`FILL\\(part, 0\\)`) }),
        Match.objectLike({
          Id: 'part',
          MetricStat: Match.objectLike({ Metric: Match.objectLike({ MetricName: metric }) }),
        }),
        Match.objectLike({
          Id: 'received',
          MetricStat: Match.objectLike({
            Metric: Match.objectLike({ MetricName: WORKER_METRICS.batchSize }),
          }),
        }),
      ]),
    });
  });

  it('runs the health job every minute, read-only as its own database user, one at a time', () => {
    const fnRef = new Capture();
    template.hasResourceProperties('AWS::Events::Rule', {
      Description: 'Runs the health job',
      ScheduleExpression: 'rate(1 minute)',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [fnRef, 'Arn'] } })],
    });
    const fn = template.toJSON().Resources[fnRef.asString()];
    expect(fn.Properties.ReservedConcurrentExecutions).toBe(1);
    expect(fn.Properties.Timeout).toBe(30);
    expect(fn.Properties.Environment.Variables).toMatchObject({
      DB_AUTH: 'iam',
      DB_USER: 'sqs_worker_health',
      DB_POOL_SIZE: '1',
      WORKER_CONSUMER: 'case-worker',
      HEALTH_STATEMENT_TIMEOUT_MS: '5000',
    });
    // The migration function provisions the role before the job first runs.
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ HEALTH_DB_USER: 'sqs_worker_health' }) },
    });
    const triggerId = Object.keys(template.findResources('Custom::Trigger'))[0];
    expect(template.toJSON().Resources[fnRef.asString()].DependsOn).toEqual(
      expect.arrayContaining([triggerId]),
    );
  });

  it('runs the retention job hourly with a bounded run, its own database user and the guard as variables', () => {
    const fnRef = new Capture();
    template.hasResourceProperties('AWS::Events::Rule', {
      Description: 'Runs the retention job',
      ScheduleExpression: 'rate(1 hour)',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [fnRef, 'Arn'] } })],
    });
    const fn = template.toJSON().Resources[fnRef.asString()];
    expect(fn.Properties.Timeout).toBe(250);
    expect(fn.Properties.ReservedConcurrentExecutions).toBe(1);
    expect(fn.Properties.Environment.Variables).toMatchObject({
      DB_USER: 'sqs_worker_retention',
      RETENTION_SOURCE_SECONDS: String(4 * 86_400),
      RETENTION_DLQ_SECONDS: String(14 * 86_400),
      RETENTION_INBOX_SECONDS: String(19 * 86_400),
      RETENTION_OUTBOX_SECONDS: String(7 * 86_400),
      RETENTION_QUARANTINE_SECONDS: String(30 * 86_400),
      RETENTION_RUN_GUARD_MS: '10000',
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: fnRef.asString() } }],
      Period: 3600,
      AlarmActions: [{ Ref: Match.anyValue() }],
    });
    expect(JSON.stringify(template.findResources('AWS::CloudWatch::Dashboard'))).toContain(
      WORKER_METRICS.retentionRowsRemoved,
    );
  });

  it('alarms on the TerminalFailure rate with metric math over the EMF metrics', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Threshold: 1,
      Metrics: Match.arrayWith([
        Match.objectLike({ Expression: Match.stringLikeRegexp('terminal') }),
        Match.objectLike({
          Id: 'terminal',
          MetricStat: Match.objectLike({ Metric: Match.objectLike({ MetricName: 'TerminalFailure' }) }),
        }),
      ]),
    });
  });

  it('creates a versioned, encrypted, TLS-only, private, access-logged payload bucket that keeps versions past queue + DLQ retention', () => {
    // Prepare
    const logs = new Capture();
    const bucketId = logicalIdOf(template, 'AWS::S3::Bucket', {
      VersioningConfiguration: { Status: 'Enabled' },
    });

    // Assess: 4 days + 14 days of retention = 18 days for the current object and for every old version.
    template.hasResourceProperties('AWS::S3::Bucket', {
      VersioningConfiguration: { Status: 'Enabled' },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      LoggingConfiguration: { DestinationBucketName: { Ref: logs }, LogFilePrefix: 'payload-bucket/' },
      LifecycleConfiguration: {
        Rules: Match.arrayWith([
          Match.objectLike({
            ExpirationInDays: 18,
            NoncurrentVersionExpiration: { NoncurrentDays: 18 },
            Status: 'Enabled',
          }),
          Match.objectLike({ ExpiredObjectDeleteMarker: true }),
        ]),
      },
    });
    expect(template.toJSON().Resources[logs.asString()].Type).toBe('AWS::S3::Bucket');
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: bucketId },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
    template.hasResource('AWS::S3::Bucket', {
      Properties: Match.objectLike({ VersioningConfiguration: Match.anyValue() }),
      DeletionPolicy: 'Retain',
    });
  });

  it('lets the worker read payload object versions and list the bucket (no write), and gives the relay nothing on S3', () => {
    // Prepare
    const bucketId = logicalIdOf(template, 'AWS::S3::Bucket', {
      VersioningConfiguration: { Status: 'Enabled' },
    });
    const s3Statements = (role: string) =>
      Object.values(template.findResources('AWS::IAM::Policy'))
        .filter((policy) => JSON.stringify(policy.Properties.Roles).includes(role))
        .flatMap(
          (policy) =>
            policy.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[],
        )
        .filter((statement) => [statement.Action].flat().some((action) => action.startsWith('s3:')));
    const roleOf = (fn: string) =>
      Object.keys(template.findResources('AWS::IAM::Role')).find((id) =>
        id.startsWith(`Worker${fn}ServiceRole`),
      ) as string;

    // Assess
    // ListBucket: S3 answers a missing object with 404 (terminal PAYLOAD_NOT_FOUND) only to a reader that may list.
    expect(s3Statements(roleOf('WorkerFunction'))).toEqual([
      {
        Sid: 'ReadPayloadObjects',
        Effect: 'Allow',
        Action: ['s3:GetObject', 's3:GetObjectVersion'],
        Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId, 'Arn'] }, '/*']] },
      },
      {
        Sid: 'KnowMissingPayloads',
        Effect: 'Allow',
        Action: 's3:ListBucket',
        Resource: { 'Fn::GetAtt': [bucketId, 'Arn'] },
      },
    ]);
    expect(s3Statements(roleOf('JobsOutboxRelayFunction'))).toEqual([]);
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: 'SQS → PostgreSQL inbox worker',
      // The limit the default function (512 MB, one record at a time) can hold: lib/resolve-payload-limit.ts.
      Environment: { Variables: Match.objectLike({ PAYLOAD_MAX_BYTES: String(40 * 1024 * 1024) }) },
    });
  });

  it('alarms when the worker is denied a payload read', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'PayloadAccessDenied',
      Namespace: WORKER_METRICS.defaultNamespace,
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('deploys the breaker: scheduled, one environment, pointed at the mapping, allowed only that mapping', () => {
    // Prepare
    const mappingId = logicalIdOf(template, 'AWS::Lambda::EventSourceMapping', {
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    const breakerId = logicalIdOf(template, 'AWS::Lambda::Function', {
      Description:
        'Disables the worker event source mapping while the database is unavailable and enables it again (scheduled)',
    });
    const resources = template.toJSON().Resources;
    const breaker = resources[breakerId];
    const roleId = breaker.Properties.Role['Fn::GetAtt'][0] as string;

    // Assess: configuration
    expect(breaker.Properties).toMatchObject({ ReservedConcurrentExecutions: 1, Timeout: 55 });
    expect(breaker.Properties.Environment.Variables).toMatchObject({
      BREAKER_MAPPING_UUID: { Ref: mappingId },
      BREAKER_SCALING_MODE: 'maximum-concurrency',
      BREAKER_MAX_CONCURRENCY: '70',
      BREAKER_HALF_OPEN_CONCURRENCY: '2',
      BREAKER_FAILURE_THRESHOLD: '2',
      BREAKER_CHECK_INTERVAL_MS: '10000',
      DB_POOL_SIZE: '1',
      DB_USER: 'sqs_worker',
    });
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [breakerId, 'Arn'] } })],
    });
    // Assess: least privilege — every Lambda action of its role is on this one mapping's ARN
    const statements = Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((policy) => JSON.stringify(policy.Properties.Roles) === JSON.stringify([{ Ref: roleId }]))
      .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Record<string, unknown>[]);
    const lambdaStatements = statements.filter((statement) =>
      [statement.Action].flat().some((action) => String(action).startsWith('lambda:')),
    );
    expect(lambdaStatements).toHaveLength(1);
    expect(lambdaStatements[0]).toMatchObject({
      Effect: 'Allow',
      Action: ['lambda:GetEventSourceMapping', 'lambda:UpdateEventSourceMapping', 'lambda:ListTags'],
    });
    const resource = JSON.stringify(lambdaStatements[0]?.Resource);
    expect(resource).toContain(':event-source-mapping:');
    expect(resource).toContain(`{"Ref":"${mappingId}"}`);
    expect(resource).not.toContain('*');
    // Assess: alarm and output
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'BreakerOpened',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
    template.hasOutput('EventSourceMappingUuid', { Value: { Ref: mappingId } });
    // The proxy's name, for sqs-worker smoke (CloudWatch dimension ProxyName of its pinned sessions).
    const [proxyId] = Object.keys(template.findResources('AWS::RDS::DBProxy'));
    template.hasOutput('ProxyName', { Value: { Ref: proxyId } });
    const endpoints = Object.values(template.findResources('AWS::EC2::VPCEndpoint')).map((endpoint) =>
      JSON.stringify(endpoint.Properties.ServiceName),
    );
    expect(endpoints.some((name) => name.includes('.lambda'))).toBe(true);
  });

  it("lets the breaker steer the mapping's MaximumConcurrency from the worker's metrics: its settings, GetMetricData, the endpoint", () => {
    // Prepare
    const breakerId = logicalIdOf(template, 'AWS::Lambda::Function', {
      Description:
        'Disables the worker event source mapping while the database is unavailable and enables it again (scheduled)',
    });
    const breaker = template.toJSON().Resources[breakerId];
    const roleId = breaker.Properties.Role['Fn::GetAtt'][0] as string;
    const statements = Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((policy) => JSON.stringify(policy.Properties.Roles) === JSON.stringify([{ Ref: roleId }]))
      .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Record<string, unknown>[]);
    const endpoints = Object.values(template.findResources('AWS::EC2::VPCEndpoint')).map((endpoint) =>
      JSON.stringify(endpoint.Properties.ServiceName),
    );

    // Assess: the floor, the window, and the worker's namespace and service (the worker's own variables)
    expect(breaker.Properties.Environment.Variables).toMatchObject({
      CONCURRENCY_ADAPTIVE: 'true',
      CONCURRENCY_FLOOR: '2',
      CONCURRENCY_WINDOW_SECONDS: '60',
      CONCURRENCY_METRICS_NAMESPACE: WORKER_METRICS.defaultNamespace,
      CONCURRENCY_METRICS_SERVICE: 'sqs-inbox-worker',
      BREAKER_MAX_CONCURRENCY: '70',
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: 'SQS → PostgreSQL inbox worker',
      Environment: {
        Variables: Match.objectLike({
          POWERTOOLS_METRICS_NAMESPACE: WORKER_METRICS.defaultNamespace,
          POWERTOOLS_SERVICE_NAME: 'sqs-inbox-worker',
        }),
      },
    });
    // GetMetricData has no resource type: one statement, that action only
    const metricStatements = statements.filter((statement) =>
      [statement.Action].flat().some((action) => String(action).startsWith('cloudwatch:')),
    );
    expect(metricStatements).toEqual([
      { Sid: 'ReadTheWorkerMetrics', Effect: 'Allow', Action: 'cloudwatch:GetMetricData', Resource: '*' },
    ]);
    // The isolated subnets reach CloudWatch's API through an interface endpoint
    expect(endpoints.some((name) => name.includes('.monitoring'))).toBe(true);
  });

  it('alarms when the mapping has been at the concurrency floor for 30 minutes', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ConcurrencyLimit',
      Namespace: WORKER_METRICS.defaultNamespace,
      Dimensions: [{ Name: 'service', Value: 'sqs-inbox-worker' }],
      Statistic: 'Maximum',
      Period: 60,
      Threshold: 2,
      EvaluationPeriods: 30,
      DatapointsToAlarm: 30,
      ComparisonOperator: 'LessThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
    });
  });

  it('draws a dashboard with queue, ESM, function, EMF, database and proxy widgets', () => {
    const body = JSON.stringify(template.findResources('AWS::CloudWatch::Dashboard'));
    for (const name of [
      'ApproximateNumberOfMessagesNotVisible',
      'PolledEventCount',
      'ConcurrentExecutions',
      'CPUUtilization',
      'ClientConnections',
      'DbTransactionMs',
      'Adaptive concurrency: limit and signals of load',
      WORKER_METRICS.concurrencyLimit,
      ...WORKER_METRICS.load,
      ...WORKER_METRICS.outcomes,
      'Duplicates: redelivery or resend; receive count (max, avg)',
      ...WORKER_METRICS.duplicateCopies,
      WORKER_METRICS.receiveCount,
      // The DynamoDB store's own health figure is on its dashboard (dynamodb-stack.test.ts).
      ...Object.values(WORKER_METRICS.health).filter(
        (name) => name !== WORKER_METRICS.health.inboxLeasesExpired,
      ),
    ]) {
      expect(body).toContain(name);
    }
  });
});

describe('Class: SqsInboxWorkerStack (scalingMode provisioned)', () => {
  let stack: SqsInboxWorkerStack;
  let template: Template;
  beforeAll(() => {
    ({ stack, template } = synth('Provisioned', {
      production: false,
      scalingMode: 'provisioned',
      dbMaxConnections: 400,
    }));
  });

  it('gives the event source provisioned pollers from the capacity formula and no MaximumConcurrency', () => {
    // Assess: (400 − 10) / 1 = 390 safe → 39 pollers × 10 invokes = reserved concurrency 390
    const mapping = Object.values(template.findResources('AWS::Lambda::EventSourceMapping'));
    expect(mapping).toHaveLength(1);
    expect(mapping[0]?.Properties).toMatchObject({
      ProvisionedPollerConfig: { MinimumPollers: 2, MaximumPollers: 39 },
      MetricsConfig: { Metrics: ['EventCount'] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    expect(mapping[0]?.Properties.ScalingConfig).toBeUndefined();
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: 'SQS → PostgreSQL inbox worker',
      ReservedConcurrentExecutions: 390,
    });
    Annotations.fromStack(stack).hasInfo(
      '/Provisioned/Worker',
      Match.stringLikeRegexp(
        'provisioned pollers 2–39 \\(derived\\) \\(2 always on\\), reservedConcurrency 390',
      ),
    );
  });

  it('draws the duplicates told apart against the receive count (Maximum and Average) on one dashboard graph', () => {
    // Act: the widgets of the dashboard body (an Fn::Join of strings and tokens)
    const dashboards = Object.values(template.findResources('AWS::CloudWatch::Dashboard'));
    expect(dashboards).toHaveLength(1);
    const parts = dashboards[0]?.Properties.DashboardBody['Fn::Join'][1] as unknown[];
    const body = parts.map((part) => (typeof part === 'string' ? part : 'token')).join('');
    const widget = (
      JSON.parse(body).widgets as { properties: { title: string; metrics: unknown[][] } }[]
    ).find((w) => w.properties.title === 'Duplicates: redelivery or resend; receive count (max, avg)');

    // Assess: CDK leaves CloudWatch's defaults out (stat Average, the left axis)
    const metrics = (widget?.properties.metrics ?? []).map((m) => {
      const options = m.at(-1) as { stat?: string; yAxis?: string };
      return [m[1], options.stat ?? 'Average', options.yAxis ?? 'left'];
    });
    expect(metrics).toEqual([
      [WORKER_METRICS.duplicateCopies[0], 'Sum', 'left'],
      [WORKER_METRICS.duplicateCopies[1], 'Sum', 'left'],
      [WORKER_METRICS.receiveCount, 'Maximum', 'right'],
      [WORKER_METRICS.receiveCount, 'Average', 'right'],
    ]);
  });

  it("draws the mapping's EventCount metrics on the dashboard, by its UUID", () => {
    // Prepare
    const mappingId = Object.keys(template.findResources('AWS::Lambda::EventSourceMapping'))[0];
    const body = JSON.stringify(template.findResources('AWS::CloudWatch::Dashboard'));

    // Assess
    for (const name of [
      'PolledEventCount',
      'InvokedEventCount',
      'FailedInvokeEventCount',
      'DeletedEventCount',
    ]) {
      expect(body).toContain(name);
    }
    expect(body).toContain(`"EventSourceMappingUUID\\",\\"",{"Ref":"${mappingId}"}`);
  });

  it('tells the breaker to restore provisioned pollers, not a MaximumConcurrency', () => {
    const breaker = Object.values(template.findResources('AWS::Lambda::Function')).find(
      (fn) => fn.Properties.Environment?.Variables?.BREAKER_SCALING_MODE !== undefined,
    );

    expect(breaker?.Properties.Environment.Variables).toMatchObject({
      BREAKER_SCALING_MODE: 'provisioned',
      BREAKER_MINIMUM_POLLERS: '2',
      BREAKER_MAXIMUM_POLLERS: '39',
    });
    expect(breaker?.Properties.Environment.Variables.BREAKER_MAX_CONCURRENCY).toBeUndefined();
    // No MaximumConcurrency to steer: no control loop, no metric reads, no floor alarm
    expect(breaker?.Properties.Environment.Variables.CONCURRENCY_ADAPTIVE).toBeUndefined();
    expect(JSON.stringify(template.findResources('AWS::IAM::Policy'))).not.toContain(
      'cloudwatch:GetMetricData',
    );
    expect(stack.worker.alarms).not.toHaveProperty('ConcurrencyAtFloor');
  });

  it('refuses at synth a database too small for the minimum of 2 pollers', () => {
    expect(() =>
      synth('TooSmall', { production: false, scalingMode: 'provisioned', dbMaxConnections: 25 }),
    ).toThrow(
      'scalingMode "provisioned" needs a safe worker concurrency of at least 20 (2 pollers, the minimum, × 10 concurrent invokes each), but the safe worker concurrency is 15',
    );
  });
});

/** The breaker function of a stack with the PostgreSQL store, and every statement of its role's policies. */
function breakerOf(template: Template) {
  const breakerId = logicalIdOf(template, 'AWS::Lambda::Function', {
    Description:
      'Disables the worker event source mapping while the database is unavailable and enables it again (scheduled)',
  });
  const breaker = template.toJSON().Resources[breakerId];
  const roleId = breaker.Properties.Role['Fn::GetAtt'][0] as string;
  const statements = Object.values(template.findResources('AWS::IAM::Policy'))
    .filter((policy) => JSON.stringify(policy.Properties.Roles) === JSON.stringify([{ Ref: roleId }]))
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Record<string, unknown>[]);
  return { variables: breaker.Properties.Environment.Variables as Record<string, string>, statements };
}

describe('Class: SqsInboxWorkerStack (adaptiveConcurrency false)', () => {
  let stack: SqsInboxWorkerStack;
  let template: Template;
  beforeAll(() => {
    ({ stack, template } = synth('AdaptiveOff', { production: false, adaptiveConcurrency: false }));
  });

  it('deploys the breaker without its control loop: no CONCURRENCY_* variable, no GetMetricData', () => {
    // Prepare
    const { variables, statements } = breakerOf(template);

    // Assess: the breaker itself is unchanged…
    expect(variables).toMatchObject({
      BREAKER_SCALING_MODE: 'maximum-concurrency',
      BREAKER_MAX_CONCURRENCY: '70',
      BREAKER_HALF_OPEN_CONCURRENCY: '2',
    });
    expect(statements.map((statement) => statement.Sid)).toContain('ControlTheWorkerEventSourceMapping');
    // …its loop is off: CONCURRENCY_ADAPTIVE defaults to false in the breaker, and it reads no metrics
    expect(Object.keys(variables).filter((name) => name.startsWith('CONCURRENCY_'))).toEqual([]);
    expect(statements.map((statement) => statement.Sid)).not.toContain('ReadTheWorkerMetrics');
    expect(JSON.stringify(template.findResources('AWS::IAM::Policy'))).not.toContain(
      'cloudwatch:GetMetricData',
    );
  });

  it('has no ConcurrencyAtFloor alarm; BreakerOpened stays', () => {
    // Assess
    expect(stack.worker.alarms).not.toHaveProperty('ConcurrencyAtFloor');
    expect(stack.worker.alarms).toHaveProperty('BreakerOpened');
    expect(
      template.findResources('AWS::CloudWatch::Alarm', {
        Properties: { MetricName: WORKER_METRICS.concurrencyLimit },
      }),
    ).toEqual({});
  });
});

describe('Class: SqsInboxWorkerStack (concurrencyFloor)', () => {
  let stack: SqsInboxWorkerStack;
  let template: Template;
  beforeAll(() => {
    ({ stack, template } = synth('Floor', { production: false, concurrencyFloor: 5 }));
  });

  it("gives the breaker's control loop the floor, and lets it read the worker's metrics", () => {
    // Prepare
    const { variables, statements } = breakerOf(template);

    // Assess
    expect(variables).toMatchObject({
      CONCURRENCY_ADAPTIVE: 'true',
      CONCURRENCY_FLOOR: '5',
      BREAKER_MAX_CONCURRENCY: '70',
    });
    expect(statements).toContainEqual({
      Sid: 'ReadTheWorkerMetrics',
      Effect: 'Allow',
      Action: 'cloudwatch:GetMetricData',
      Resource: '*',
    });
  });

  it("alarms at that floor, not at AWS's minimum", () => {
    // Prepare
    const description = new Capture();

    // Assess
    expect(stack.worker.alarms).toHaveProperty('ConcurrencyAtFloor');
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: WORKER_METRICS.concurrencyLimit,
      Threshold: 5,
      ComparisonOperator: 'LessThanOrEqualToThreshold',
      AlarmDescription: description,
    });
    expect(description.asString()).toContain('at its floor (5) for 30 minutes');
  });

  it('refuses at synth a floor above maxConcurrency, before creating anything', () => {
    expect(() =>
      synth('FloorTooHigh', { production: false, maxConcurrency: 4, concurrencyFloor: 5 }),
    ).toThrow(
      "concurrencyFloor (5) must not exceed maxConcurrency (4): the breaker's control loop moves the mapping's MaximumConcurrency between the two; lower concurrencyFloor or raise maxConcurrency",
    );
  });
});

describe('Class: SqsInboxWorkerStack (dev, FIFO)', () => {
  let template: Template;
  beforeAll(() => {
    ({ template } = synth('Fifo', {
      production: false,
      fifo: true,
      maxReceiveCount: 5,
      dbMaxConnections: 40,
    }));
  });

  it('creates FIFO source queue and FIFO DLQ with content-based deduplication off', () => {
    const queues = Object.values(template.findResources('AWS::SQS::Queue'));
    expect(queues).toHaveLength(2);
    for (const queue of queues) {
      expect(queue.Properties).toMatchObject({ FifoQueue: true, ContentBasedDeduplication: false });
    }
    template.hasResourceProperties('AWS::SQS::Queue', {
      FifoQueue: true,
      RedrivePolicy: Match.objectLike({ maxReceiveCount: 5 }),
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 10,
      MaximumBatchingWindowInSeconds: Match.absent(),
      ScalingConfig: { MaximumConcurrency: 30 },
    });
  });

  it('deletes the queues and the database with the stack in a non-production stage', () => {
    const queues = Object.values(template.findResources('AWS::SQS::Queue'));
    expect(queues).toHaveLength(2);
    for (const queue of queues) {
      expect(queue).toMatchObject({ DeletionPolicy: 'Delete', UpdateReplacePolicy: 'Delete' });
    }
    template.hasResource('AWS::RDS::DBInstance', { DeletionPolicy: 'Delete', UpdateReplacePolicy: 'Delete' });
  });

  it('turns production safeguards off for a non-production stage', () => {
    template.hasResource('AWS::RDS::DBInstance', {
      DeletionPolicy: 'Delete',
      Properties: Match.objectLike({
        MultiAZ: false,
        DeletionProtection: false,
        DBInstanceClass: 'db.t4g.micro',
      }),
    });
  });
});

describe('Method: SqsDatabaseWorker.grantPayloadWrite()', () => {
  it('gives a producer s3:PutObject on the payload objects and nothing else', () => {
    // Prepare
    const stack = new SqsInboxWorkerStack(new App({ context: noBundling }), 'Producer', {
      worker: { queueIdentity: DEPLOYED_QUEUES, alarms: 'none' },
    });
    const producer = new iam.Role(stack, 'ProducerRole', {
      assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com'),
    });

    // Act
    stack.worker.grantPayloadWrite(producer);

    // Assess
    const template = Template.fromStack(stack);
    const bucketId = logicalIdOf(template, 'AWS::S3::Bucket', {
      VersioningConfiguration: { Status: 'Enabled' },
    });
    template.hasResourceProperties('AWS::IAM::Policy', {
      Roles: [{ Ref: Match.stringLikeRegexp('^ProducerRole') }],
      PolicyDocument: {
        Statement: [
          {
            Effect: 'Allow',
            Action: 's3:PutObject',
            Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId, 'Arn'] }, '/*']] },
          },
        ],
      },
    });
  });
});

describe('Class: SqsInboxWorkerStack (production queue replacement guard)', () => {
  /** The message synth fails with, or undefined when it succeeds. */
  const synthError = (worker: SqsInboxWorkerStackProps['worker']): string | undefined => {
    try {
      synth('Guard', worker);
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  };

  it('refuses a production worker with no recorded queue identity, naming the value to record', () => {
    // Act
    const message = synthError({});

    // Assess
    expect(message).toContain(
      `queueIdentity is not set: a production worker retains its source queue and DLQ, and a deploy that would replace them must be acknowledged. Set queueIdentity to ${JSON.stringify(DEPLOYED_QUEUES)}`,
    );
    expect(message).toContain('aws cloudformation describe-stack-resources --stack-name Guard');
  });

  it('refuses turning the retained queues into FIFO queues, naming both fixes', () => {
    // Act
    const message = synthError({ fifo: true, queueIdentity: DEPLOYED_QUEUES });

    // Assess
    expect(message).toContain(
      "fifo is true but queueIdentity.fifo records false: SQS cannot change a queue's type, so this deploy would replace the source queue and the DLQ. Set fifo back to false; or, to replace them on purpose: stop the producers, drain the DLQ (sqs-worker dlq peek, then dlq redrive) and let the worker empty the source queue, then set acknowledgeQueueReplacement: true for that deploy",
    );
  });

  it('refuses a changed logical id (a renamed or moved construct), one problem per queue', () => {
    // Act: the identity recorded before the worker construct was renamed from "InboxWorker" to "Worker"
    const message = synthError({
      queueIdentity: {
        fifo: false,
        queueLogicalId: 'InboxWorkerQueue0A1B2C3D',
        deadLetterQueueLogicalId: 'InboxWorkerDeadLetterQueue4E5F6A7B',
      },
    });

    // Assess
    expect(message).toContain(
      `the source queue's logical id is "WorkerQueue9380F652" but queueIdentity.queueLogicalId records "InboxWorkerQueue0A1B2C3D": a renamed or moved construct replaces the source queue. Restore the construct's id and path, or keep the old id with overrideLogicalId('InboxWorkerQueue0A1B2C3D') on its CfnQueue`,
    );
    expect(message).toContain(
      `the DLQ's logical id is "WorkerDeadLetterQueue2879C389" but queueIdentity.deadLetterQueueLogicalId records "InboxWorkerDeadLetterQueue4E5F6A7B"`,
    );
  });

  it('checks the logical ids as synthesized, so one pinned with overrideLogicalId passes', () => {
    // Prepare
    const app = new App({ context: noBundling });
    const stack = new SqsInboxWorkerStack(app, 'Pinned', {
      worker: {
        alarms: 'none',
        queueIdentity: { ...DEPLOYED_QUEUES, queueLogicalId: 'InboxWorkerQueue0A1B2C3D' },
      },
    });

    // Act
    (stack.worker.queue.node.defaultChild as sqs.CfnQueue).overrideLogicalId('InboxWorkerQueue0A1B2C3D');
    const template = Template.fromStack(stack);

    // Assess
    expect(template.toJSON().Resources.InboxWorkerQueue0A1B2C3D.Type).toBe('AWS::SQS::Queue');
  });

  it('lets an acknowledged replacement through, warning with the identity to record afterwards', () => {
    // Act
    const { stack, template } = synth('Acknowledged', {
      fifo: true,
      queueIdentity: DEPLOYED_QUEUES,
      acknowledgeQueueReplacement: true,
    });

    // Assess: FIFO queues, still retained, and a warning that names the next step
    template.hasResource('AWS::SQS::Queue', {
      Properties: Match.objectLike({ FifoQueue: true }),
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
    Annotations.fromStack(stack).hasWarning(
      '/Acknowledged/Worker',
      `acknowledgeQueueReplacement is set: this deploy replaces the source queue and the DLQ; the old ones are retained and must be deleted by hand once empty. After the deploy, set queueIdentity to ${JSON.stringify({ ...DEPLOYED_QUEUES, fifo: true })} and remove acknowledgeQueueReplacement [ack: sqs-inbox-worker:queue-replacement]`,
    );
  });

  it('refuses an acknowledgement left set when nothing is replaced', () => {
    const message = synthError({ queueIdentity: DEPLOYED_QUEUES, acknowledgeQueueReplacement: true });

    expect(message).toContain(
      'acknowledgeQueueReplacement is true but this synth replaces no queue (it matches queueIdentity); remove acknowledgeQueueReplacement so the next replacing change is refused again',
    );
  });

  it('does not guard a non-production worker, whose queues are deleted with the stack anyway', () => {
    expect(synthError({ production: false, fifo: true })).toBeUndefined();
  });
});
