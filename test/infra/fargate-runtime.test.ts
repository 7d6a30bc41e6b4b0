import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, Duration, Stack } from 'aws-cdk-lib';
import { Annotations, Capture, Match, Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import postgres from 'postgres';
import { beforeAll, describe, expect, it } from 'vitest';
import { exampleHandlersFor } from '../../lambda/domain/index.ts';
import { createBatchEngine } from '../../lambda/runtimes/create-batch-engine.ts';
import { loadPollerConfig } from '../../lambda/runtimes/poller/poller-config.ts';
import { PollerService } from '../../lib/runtimes/fargate/poller-service.ts';
import { resolvePollerSettings } from '../../lib/runtimes/fargate/resolve-poller-settings.ts';
import { SqsDatabaseWorker } from '../../lib/sqs-database-worker.ts';
import { SqsInboxWorkerStack, type SqsInboxWorkerStackProps } from '../../lib/sqs-inbox-worker-stack.ts';
import { stageSettings } from '../../lib/stage-settings.ts';

// Bundling of the Lambda functions is skipped; the poller's image is only fingerprinted at synth anyway (no Docker).
const noBundling = { 'aws:cdk:bundling-stacks': [] };

const DEPLOYED_QUEUES = {
  fifo: false,
  queueLogicalId: 'WorkerQueue9380F652',
  deadLetterQueueLogicalId: 'WorkerDeadLetterQueue2879C389',
} as const;

/** A production Fargate worker (plus `worker` overrides); `alarms: 'none'` unless a reader is given. */
function synth(worker: SqsInboxWorkerStackProps['worker'] = {}) {
  const app = new App({ context: noBundling });
  const stack = new SqsInboxWorkerStack(app, 'Fargate', {
    worker: {
      runtime: 'fargate',
      queueIdentity: DEPLOYED_QUEUES,
      ...(worker.alarmEmail || worker.alarmTopicArn ? {} : { alarms: 'none' as const }),
      ...worker,
    },
  });
  return { app, stack, template: Template.fromStack(stack) };
}

const logicalIds = (template: Template, type: string): string[] => Object.keys(template.findResources(type));
const only = (ids: string[], what: string): string => {
  expect(ids, what).toHaveLength(1);
  return ids[0] as string;
};

describe('Runtime fargate: the poller as an ECS Fargate service (production defaults)', () => {
  let app: App;
  let stack: SqsInboxWorkerStack;
  let template: Template;
  let resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
  beforeAll(() => {
    ({ app, stack, template } = synth());
    resources = template.toJSON().Resources;
  });

  it('deploys no worker function, no event source mapping and no breaker; the scheduled jobs stay', () => {
    // Assess
    expect(stack.worker.workerFunction).toBeUndefined();
    expect(stack.worker.eventSource).toBeUndefined();
    expect(stack.worker.breakerFunction).toBeUndefined();
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 0);
    const descriptions = Object.values(template.findResources('AWS::Lambda::Function')).map(
      (fn) => fn.Properties.Description as string | undefined,
    );
    expect(descriptions).not.toContain('SQS → PostgreSQL inbox worker');
    expect(descriptions.filter((d) => d?.startsWith('Disables the worker event source mapping'))).toEqual([]);
    expect(descriptions.filter(Boolean).map((d) => d?.split(' ')[0])).toEqual(
      expect.arrayContaining(['Applies', 'Publishes', 'Purges']),
    );
    template.resourceCountIs('AWS::ECS::Service', 1);
    // The schema exists and the image can be pulled before the first task starts.
    const [service] = Object.values(template.findResources('AWS::ECS::Service')) as { DependsOn: string[] }[];
    const endpoints = logicalIds(template, 'AWS::EC2::VPCEndpoint').filter((id) =>
      /EcrApi|EcrDocker|Logs|S3/.test(id),
    );
    expect(endpoints).toHaveLength(4);
    expect(service?.DependsOn).toEqual(
      expect.arrayContaining([expect.stringMatching(/^WorkerMigrationTrigger/), ...endpoints]),
    );
    expect(Object.keys(template.toJSON().Outputs)).toEqual(
      expect.arrayContaining(['PollerClusterName', 'PollerServiceName', 'PollerLogGroupName']),
    );
    expect(Object.keys(template.toJSON().Outputs)).not.toContain('WorkerFunctionName');
  });

  it('names the task bounds from the capacity formula at synth', () => {
    Annotations.fromStack(stack).hasNoError('*', Match.anyValue());
    Annotations.fromStack(stack).hasInfo(
      '/Fargate/Worker',
      Match.stringLikeRegexp(
        '^safe worker concurrency 7, bound by db_connections \\(db_available_connections 70 / connection_per_worker 10\\); Fargate tasks 1–7 \\(derived\\) of 10 connections each',
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
  });

  it('gives the task role exactly: attributes, receive, delete and extend on its queue, rds-db:connect as the worker through the proxy, payload reads', () => {
    // Prepare
    const taskDefinition = only(logicalIds(template, 'AWS::ECS::TaskDefinition'), 'one task definition');
    const taskRoleArn = resources[taskDefinition]?.Properties.TaskRoleArn as { 'Fn::GetAtt': [string] };
    const taskRole = taskRoleArn['Fn::GetAtt'][0];
    const queue = only(
      Object.keys(
        template.findResources('AWS::SQS::Queue', { Properties: { RedrivePolicy: Match.anyValue() } }),
      ),
      'the source queue',
    );
    const proxy = only(logicalIds(template, 'AWS::RDS::DBProxy'), 'the proxy');
    const bucket = only(
      Object.keys(
        template.findResources('AWS::S3::Bucket', {
          Properties: { VersioningConfiguration: { Status: 'Enabled' } },
        }),
      ),
      'the payload bucket',
    );

    // Act: every statement of every policy attached to the task role, and its managed policies
    const statements = Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((policy) =>
        (policy.Properties.Roles as { Ref: string }[]).some((role) => role.Ref === taskRole),
      )
      .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Record<string, unknown>[]);

    // Assess
    expect(resources[taskRole]?.Properties.ManagedPolicyArns).toBeUndefined();
    expect(resources[taskRole]?.Properties.AssumeRolePolicyDocument).toMatchObject({
      Statement: [{ Principal: { Service: 'ecs-tasks.amazonaws.com' }, Action: 'sts:AssumeRole' }],
    });
    expect(statements).toEqual([
      {
        Sid: 'ConsumeTheSourceQueue',
        Effect: 'Allow',
        // GetQueueAttributes: the poller's first call (its ARN and FIFO flag); component-grants.test.ts derives the
        // actions from the calls the poller's code makes.
        Action: [
          'sqs:GetQueueAttributes',
          'sqs:ReceiveMessage',
          'sqs:ChangeMessageVisibility',
          'sqs:DeleteMessage',
        ],
        Resource: { 'Fn::GetAtt': [queue, 'Arn'] },
      },
      {
        Effect: 'Allow',
        Action: 'rds-db:connect',
        Resource: {
          'Fn::Join': [
            '',
            [
              'arn:',
              { Ref: 'AWS::Partition' },
              ':rds-db:',
              { Ref: 'AWS::Region' },
              ':',
              { Ref: 'AWS::AccountId' },
              ':dbuser:',
              { 'Fn::Select': [6, { 'Fn::Split': [':', { 'Fn::GetAtt': [proxy, 'DBProxyArn'] }] }] },
              '/sqs_worker',
            ],
          ],
        },
      },
      {
        Sid: 'ReadPayloadObjects',
        Effect: 'Allow',
        Action: ['s3:GetObject', 's3:GetObjectVersion'],
        Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucket, 'Arn'] }, '/*']] },
      },
      // S3 answers a missing object with 404 (terminal PAYLOAD_NOT_FOUND) only to a reader that may list the bucket.
      {
        Sid: 'KnowMissingPayloads',
        Effect: 'Allow',
        Action: 's3:ListBucket',
        Resource: { 'Fn::GetAtt': [bucket, 'Arn'] },
      },
    ]);
    // The queues are SSE-SQS: no key, so no kms action at all.
    expect(JSON.stringify(statements)).not.toMatch(/kms:/);
  });

  it('runs the tasks in the worker subnets, and the proxy admits them on 5432 only', () => {
    // Prepare
    const service = template.findResources('AWS::ECS::Service');
    const [definition] = Object.values(service);
    const network = definition?.Properties.NetworkConfiguration.AwsvpcConfiguration;
    const migration = Object.values(template.findResources('AWS::Lambda::Function')).find((fn) =>
      String(fn.Properties.Description).startsWith('Applies pending migrations'),
    );
    const proxyGroup = new Capture();

    // Assess: same isolated subnets as the functions, no public address
    expect(network).toMatchObject({ AssignPublicIp: 'DISABLED' });
    expect(network.Subnets).toEqual(migration?.Properties.VpcConfig.SubnetIds);
    expect(network.SecurityGroups).toHaveLength(1);
    const serviceGroup = network.SecurityGroups[0]['Fn::GetAtt'][0] as string;
    expect(resources[serviceGroup]?.Type).toBe('AWS::EC2::SecurityGroup');
    template.hasResourceProperties('AWS::EC2::SecurityGroupIngress', {
      IpProtocol: 'tcp',
      FromPort: 5432,
      ToPort: 5432,
      SourceSecurityGroupId: { 'Fn::GetAtt': [serviceGroup, 'GroupId'] },
      GroupId: { 'Fn::GetAtt': [proxyGroup, 'GroupId'] },
    });
    const proxy = Object.values(template.findResources('AWS::RDS::DBProxy'))[0];
    expect(proxy?.Properties.VpcSecurityGroupIds).toEqual([
      { 'Fn::GetAtt': [proxyGroup.asString(), 'GroupId'] },
    ]);
  });

  it('stops a task with SIGTERM and waits the drain plus 10 s before SIGKILL', () => {
    template.hasResourceProperties('AWS::ECS::TaskDefinition', {
      RequiresCompatibilities: ['FARGATE'],
      Cpu: '512',
      Memory: '1024',
      RuntimePlatform: { CpuArchitecture: 'ARM64', OperatingSystemFamily: 'LINUX' },
      ContainerDefinitions: [
        Match.objectLike({
          StopTimeout: 40,
          ReadonlyRootFilesystem: true,
          Environment: Match.arrayWith([{ Name: 'POLLER_STOP_TIMEOUT_SECONDS', Value: '30' }]),
          LogConfiguration: Match.objectLike({ LogDriver: 'awslogs' }),
        }),
      ],
    });
    const dockerfile = readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8');
    expect(dockerfile).toMatch(/^STOPSIGNAL SIGTERM$/m);
    expect(dockerfile).toMatch(/^USER node$/m);
  });

  it('scales on the source queue depth between minTasks and the capacity formula, never above it in a deploy', () => {
    // Prepare
    const queue = new Capture();

    // Assess: 70 connections for the worker / 10 per task = 7 tasks at most
    template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalableTarget', {
      MinCapacity: 1,
      MaxCapacity: 7,
      ScalableDimension: 'ecs:service:DesiredCount',
    });
    template.hasResourceProperties('AWS::ECS::Service', {
      DeploymentConfiguration: Match.objectLike({
        MaximumPercent: 100,
        MinimumHealthyPercent: 0,
        DeploymentCircuitBreaker: { Enable: true, Rollback: true },
      }),
    });
    // A deploy must not reset the count scaling set.
    expect(
      Object.values(template.findResources('AWS::ECS::Service'))[0]?.Properties.DesiredCount,
    ).toBeUndefined();
    template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalingPolicy', {
      StepScalingPolicyConfiguration: {
        AdjustmentType: 'ChangeInCapacity',
        MetricAggregationType: 'Maximum',
        StepAdjustments: [
          { MetricIntervalLowerBound: 0, MetricIntervalUpperBound: 400, ScalingAdjustment: 1 },
          { MetricIntervalLowerBound: 400, ScalingAdjustment: 5 },
        ],
      },
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Threshold: 100,
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queue, 'QueueName'] } }],
    });
    expect(queue.asString()).toBe(DEPLOYED_QUEUES.queueLogicalId);
  });

  it('keeps the queue alarms and the database alarms, drops the Lambda ones, adds the task ones, all to the topic', () => {
    // Prepare
    const alarms = stack.worker.alarms;
    const topicArn = stack.resolve(stack.worker.alarmTopic.topicArn);

    // Assess
    expect(Object.keys(alarms)).toEqual(
      expect.arrayContaining([
        'DlqNotEmpty',
        'OldestMessageAge',
        'HashMismatch',
        'TerminalFailureRate',
        'RetryRate',
        'DatabaseConnections',
        'ProxyClientConnections',
        'InFlightAge',
        'RunningTasksBelowDesired',
        'TaskCpuHigh',
        'TaskMemoryHigh',
      ]),
    );
    for (const lambdaOnly of [
      'FunctionErrors',
      'FunctionThrottles',
      'DurationNearTimeout',
      'BreakerOpened',
    ]) {
      expect(alarms).not.toHaveProperty(lambdaOnly);
    }
    for (const [name, alarm] of Object.entries(alarms)) {
      const cfn = alarm.node.defaultChild as { alarmActions?: unknown; okActions?: unknown };
      expect({ name, actions: stack.resolve(cfn.alarmActions) }).toEqual({ name, actions: [topicArn] });
      expect(stack.resolve(cfn.okActions)).toEqual([topicArn]);
    }
    // A record is in flight legitimately up to its lease plus the heartbeat's extensions: 60 s + 900 s.
    const inFlight = alarms.InFlightAge?.node.defaultChild as unknown as { threshold: number };
    expect(stack.resolve(inFlight.threshold)).toBe(960_000);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: Match.arrayWith([
        Match.objectLike({
          Id: 'running',
          MetricStat: Match.objectLike({
            Metric: Match.objectLike({ Namespace: 'ECS/ContainerInsights', MetricName: 'RunningTaskCount' }),
          }),
        }),
      ]),
    });
    // Container Insights feeds that alarm.
    template.hasResourceProperties('AWS::ECS::Cluster', {
      ClusterSettings: [{ Name: 'containerInsights', Value: 'enabled' }],
    });
  });

  it('reaches ECR, S3 and CloudWatch Logs from the isolated subnets through endpoints', () => {
    const services = Object.values(template.findResources('AWS::EC2::VPCEndpoint')).map((endpoint) =>
      JSON.stringify(endpoint.Properties.ServiceName),
    );
    for (const service of ['ecr.api', 'ecr.dkr', 'logs', 's3', 'sqs']) {
      expect(services.some((name) => name.includes(`.${service}`))).toBe(true);
    }
  });

  it('keeps node_modules, cdk.out, .git, the tests and the CDK code out of the image build context', () => {
    // Act
    const assembly = app.synth();
    const assets = JSON.parse(readFileSync(join(assembly.directory, 'Fargate.assets.json'), 'utf8')) as {
      dockerImages: Record<string, { source: { directory: string } }>;
    };
    const [image] = Object.values(assets.dockerImages);
    const context = join(assembly.directory, image?.source.directory ?? 'missing');
    const listing = (dir: string) => readFileSync(join(context, dir), 'utf8');

    // Assess
    expect(listing('Dockerfile')).toMatch(/^FROM node:20/m);
    expect(listing('package-lock.json').length).toBeGreaterThan(0);
    expect(listing('lambda/config.ts').length).toBeGreaterThan(0);
    expect(listing('lib/bundled-function.ts').length).toBeGreaterThan(0);
    expect(listing('tools/build/build-poller.ts').length).toBeGreaterThan(0);
    for (const absent of [
      'node_modules',
      'cdk.out',
      '.git',
      'test',
      'docs',
      'lib/runtimes/fargate/poller-service.ts',
      'cdk.json',
    ]) {
      expect(() => readFileSync(join(context, absent)), absent).toThrow(/ENOENT/);
    }
  });
});

describe('Contract: the environment of the poller container', () => {
  const { stack, template } = synth({ commitMode: 'per-batch', recordConcurrency: 8, batchSize: 5 });
  const env = containerEnvironment(template);
  const [definition] = Object.values(template.findResources('AWS::ECS::TaskDefinition'));
  const entries = definition?.Properties.ContainerDefinitions[0].Environment as {
    Name: string;
    Value: unknown;
  }[];

  it('names every variable the poller reads: the worker variables plus WORKER_QUEUE_URL and POLLER_*', () => {
    // The names the poller reads (lambda/runtimes/poller/poller-config.ts), with the values the construct derived.
    expect(env).toMatchObject({
      DB_AUTH: 'iam',
      DB_SSL: 'true',
      DB_USER: 'sqs_worker',
      DB_POOL_SIZE: '10',
      WORKER_CONSUMER: 'case-worker',
      WORKER_COMMIT_MODE: 'per-batch',
      // Per batch, a batch's records run one after another; recordConcurrency counts the records in flight.
      WORKER_RECORD_CONCURRENCY: '1',
      // (1024 MiB of the task − 64 MiB for the worker) ÷ (11 × 8 records in flight), in whole MiB.
      PAYLOAD_MAX_BYTES: String(10 * 1024 * 1024),
      POLLER_CONCURRENCY: '8',
      POLLER_BATCH_SIZE: '5',
      POLLER_WAIT_SECONDS: '20',
      POLLER_VISIBILITY_SECONDS: '60',
      POLLER_STOP_TIMEOUT_SECONDS: '30',
      POLLER_MAX_EXTENSION_SECONDS: '900',
    });
    expect(Object.keys(env)).toEqual(expect.arrayContaining(['DB_HOST', 'DB_PORT', 'DB_NAME', 'AWS_REGION']));
    expect(stack.resolve(entries.find((e) => e.Name === 'WORKER_QUEUE_URL')?.Value)).toEqual({
      Ref: DEPLOYED_QUEUES.queueLogicalId,
    });
    // The local emulator endpoints stay unset in AWS.
    expect(env).not.toHaveProperty('SQS_ENDPOINT');
    expect(env).not.toHaveProperty('DATABASE_URL');
  });

  it("is accepted by the poller's loadPollerConfig, as bin/poller.ts reads it at start", () => {
    // Act
    const { worker, poller } = loadPollerConfig(env);

    // Assess
    expect(worker.database).toMatchObject({
      kind: 'host',
      auth: 'iam',
      ssl: true,
      user: 'sqs_worker',
      poolSize: 10,
    });
    expect(worker.recordConcurrency).toBe(1);
    expect(worker.commitMode).toBe('per-batch');
    // …and so is the engine the poller builds from it (it refused recordConcurrency 8 per batch at every start).
    const sql = postgres({ max: worker.database.poolSize });
    expect(() =>
      createBatchEngine({
        consumer: worker.consumer,
        handlers: exampleHandlersFor(worker),
        sql,
        recordConcurrency: worker.recordConcurrency,
        commitMode: worker.commitMode,
      }),
    ).not.toThrow();
    expect(poller).toMatchObject({
      queueUrl: env.WORKER_QUEUE_URL,
      sqsEndpoint: undefined,
      concurrency: 8,
      batchSize: 5,
      waitSeconds: 20,
      visibilitySeconds: 60,
      stopTimeoutSeconds: 30,
      maxExtensionSeconds: 900,
    });
  });

  it('turns the adaptive limit on with its default floor, which the poller reads', () => {
    // Act
    const { poller } = loadPollerConfig(env);

    // Assess
    expect(env).toMatchObject({ POLLER_ADAPTIVE_CONCURRENCY: 'on', POLLER_CONCURRENCY_FLOOR: '1' });
    expect(poller).toMatchObject({ adaptiveConcurrency: 'on', concurrencyFloor: 1, concurrency: 8 });
  });

  it("is accepted at the edges synth allows: the longest drain, the longest hold, the smallest lease's heartbeat", () => {
    for (const worker of [
      { pollerStopTimeout: Duration.seconds(110), pollerVisibility: Duration.seconds(220) },
      { pollerVisibility: Duration.seconds(10), pollerStopTimeout: Duration.seconds(5) },
      { pollerMaxExtension: Duration.seconds(43_140 - 60) },
      { pollerMaxExtension: Duration.seconds(1), batchSize: 1, pollerWaitTime: Duration.seconds(0) },
    ]) {
      // Act
      const variables = containerEnvironment(synth(worker).template);

      // Assess: what synth lets through, the poller starts with
      expect(() => loadPollerConfig(variables), JSON.stringify(variables)).not.toThrow();
    }
  });
});

describe('Runtime fargate: adaptiveConcurrency and concurrencyFloor', () => {
  it("turns the poller's adaptive limit off: POLLER_ADAPTIVE_CONCURRENCY=off and no floor", () => {
    // Act
    const env = containerEnvironment(synth({ adaptiveConcurrency: false }).template);
    const { poller } = loadPollerConfig(env);

    // Assess
    expect(env.POLLER_ADAPTIVE_CONCURRENCY).toBe('off');
    expect(env).not.toHaveProperty('POLLER_CONCURRENCY_FLOOR');
    expect(poller).toMatchObject({ adaptiveConcurrency: 'off', concurrency: 10 });
  });

  it('gives the poller the floor, up to its concurrency, which the poller accepts', () => {
    // Act: the floor at the ceiling, recordConcurrency 10 (dbPoolSize)
    const env = containerEnvironment(synth({ concurrencyFloor: 10 }).template);
    const { poller } = loadPollerConfig(env);

    // Assess
    expect(env).toMatchObject({
      POLLER_ADAPTIVE_CONCURRENCY: 'on',
      POLLER_CONCURRENCY_FLOOR: '10',
      POLLER_CONCURRENCY: '10',
    });
    expect(poller).toMatchObject({ adaptiveConcurrency: 'on', concurrencyFloor: 10, concurrency: 10 });
  });
});

/** The container's environment in the template, references replaced by values of their shape. */
function containerEnvironment(template: Template): Record<string, string> {
  const [definition] = Object.values(template.findResources('AWS::ECS::TaskDefinition'));
  const entries = definition?.Properties.ContainerDefinitions[0].Environment as {
    Name: string;
    Value: unknown;
  }[];
  return Object.fromEntries(
    entries.map(({ Name, Value }) => {
      if (typeof Value === 'string') return [Name, Value];
      if (Name === 'WORKER_QUEUE_URL') return [Name, 'https://sqs.eu-west-1.amazonaws.com/123456789012/q'];
      if (Name === 'AWS_REGION') return [Name, 'eu-west-1'];
      return [Name, 'worker-db.proxy-abc.eu-west-1.rds.amazonaws.com'];
    }),
  );
}

/** A DynamoDB worker (`store: 'dynamodb'`) on `runtime`, with the example domain's prefixes unless given. */
function synthDynamo(runtime: 'lambda' | 'fargate', worker: SqsInboxWorkerStackProps['worker'] = {}) {
  const app = new App({ context: noBundling });
  const stack = new SqsInboxWorkerStack(app, `Dynamo-${runtime}`, {
    worker: { store: 'dynamodb', runtime, queueIdentity: DEPLOYED_QUEUES, alarms: 'none', ...worker },
  });
  return { app, stack, template: Template.fromStack(stack) };
}

/** Every statement of the policies attached to `role` (a construct's IAM role). */
function statementsOf(stack: Stack, template: Template, role: { node: { defaultChild?: unknown } }) {
  const roleId = stack.getLogicalId(role.node.defaultChild as ec2.CfnVPC);
  return Object.values(template.findResources('AWS::IAM::Policy'))
    .filter((policy) => (policy.Properties.Roles as { Ref: string }[]).some((ref) => ref.Ref === roleId))
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Record<string, unknown>[]);
}

describe('Runtime fargate with store dynamodb: the poller on the DynamoDB table', () => {
  const fargate = synthDynamo('fargate', { domainKeyPrefixes: ['ORDER#', 'CUSTOMER#'] });
  const lambda = synthDynamo('lambda', { domainKeyPrefixes: ['ORDER#', 'CUSTOMER#'] });
  const taskRole = fargate.stack.worker.pollerService?.taskRole;

  it('deploys the poller service, the table and its network, the stream relay, and nothing of RDS, its proxy or the scheduled jobs', () => {
    // Assess
    expect(fargate.stack.worker.pollerService).toBeDefined();
    expect(fargate.stack.worker.workerFunction).toBeUndefined();
    expect(fargate.stack.worker.database).toBeUndefined();
    fargate.template.resourceCountIs('AWS::ECS::Service', 1);
    fargate.template.resourceCountIs('AWS::DynamoDB::Table', 1);
    for (const type of ['AWS::RDS::DBInstance', 'AWS::RDS::DBProxy', 'AWS::SecretsManager::Secret']) {
      fargate.template.resourceCountIs(type, 0);
    }
    // Two functions, outside the VPC: the outbox relay on the table's stream (its mapping the only one), the health job.
    const functions = Object.values(fargate.template.findResources('AWS::Lambda::Function'));
    expect(functions.map((fn) => fn.Properties.Description)).toEqual([
      expect.stringMatching(/^Publishes new outbox items/),
      expect.stringMatching(/^Publishes DynamoDB store health figures/),
    ]);
    for (const fn of functions) expect(fn.Properties.VpcConfig).toBeUndefined();
    const mappings = Object.values(fargate.template.findResources('AWS::Lambda::EventSourceMapping'));
    expect(mappings.map((mapping) => mapping.Properties.EventSourceArn)).toEqual([
      { 'Fn::GetAtt': [expect.stringMatching(/Table/), 'StreamArn'] },
    ]);
    // The tasks' subnets reach what the poller calls, and no endpoint of the PostgreSQL store's functions is paid for.
    const services = Object.values(fargate.template.findResources('AWS::EC2::VPCEndpoint')).map((endpoint) =>
      JSON.stringify(endpoint.Properties.ServiceName),
    );
    for (const service of ['ecr.api', 'ecr.dkr', 'logs', 's3', 'sqs', 'dynamodb']) {
      expect(
        services.some((name) => name.includes(`.${service}`)),
        service,
      ).toBe(true);
    }
    for (const service of ['secretsmanager', 'lambda']) {
      expect(
        services.some((name) => name.includes(`.${service}`)),
        service,
      ).toBe(false);
    }
    const [service] = Object.values(fargate.template.findResources('AWS::ECS::Service')) as {
      DependsOn: string[];
      Properties: { NetworkConfiguration: { AwsvpcConfiguration: { AssignPublicIp: string } } };
    }[];
    expect(service?.Properties.NetworkConfiguration.AwsvpcConfiguration.AssignPublicIp).toBe('DISABLED');
    expect(service?.DependsOn).toEqual(expect.arrayContaining([expect.stringMatching(/DynamoDbEndpoint/)]));
  });

  it('gives the task role exactly the DynamoDB grants of the Lambda worker role (the same LeadingKeys), its queue and the payload reads', () => {
    // Prepare
    const lambdaRole = lambda.stack.worker.workerFunction?.role;
    const dynamoStatements = (statements: Record<string, unknown>[]) =>
      statements.filter((statement) => JSON.stringify(statement.Action).includes('dynamodb:'));

    // Act
    const task = statementsOf(fargate.stack, fargate.template, taskRole as NonNullable<typeof taskRole>);
    const worker = statementsOf(lambda.stack, lambda.template, lambdaRole as NonNullable<typeof lambdaRole>);

    // Assess: the same statements, table and prefixes; nothing of RDS
    expect(dynamoStatements(task)).toEqual(dynamoStatements(worker));
    expect(dynamoStatements(task).map((statement) => statement.Sid)).toEqual([
      'WorkerInboxItems',
      'WorkerQuarantineItems',
      'WorkerEffectLogItems',
      'WorkerOutboxItems',
      'HandlerDomainItems',
    ]);
    expect(dynamoStatements(task)[4]).toMatchObject({
      Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['ORDER#*', 'CUSTOMER#*'] } },
    });
    expect(task.map((statement) => statement.Sid)).toEqual([
      'ConsumeTheSourceQueue',
      'WorkerInboxItems',
      'WorkerQuarantineItems',
      'WorkerEffectLogItems',
      'WorkerOutboxItems',
      'HandlerDomainItems',
      'ReadPayloadObjects',
      'KnowMissingPayloads',
    ]);
    expect(JSON.stringify(task)).not.toMatch(/rds-db:|secretsmanager:|xray:/);
  });

  it('gives the container the table and the store, no database variable, and loadPollerConfig accepts it', () => {
    // Prepare
    const env = containerEnvironment(fargate.template);

    // Act
    const { worker, poller } = loadPollerConfig({
      ...env,
      DYNAMODB_TABLE: 'SqsInboxWorker-WorkerTable-1A2B3C',
    });

    // Assess
    expect(env).toMatchObject({
      WORKER_STORE: 'dynamodb',
      RETENTION_SOURCE_SECONDS: String(4 * 86_400),
      RETENTION_DLQ_SECONDS: String(14 * 86_400),
      WORKER_RECORD_CONCURRENCY: '10',
      POLLER_CONCURRENCY: '10',
    });
    expect(Object.keys(env).filter((name) => name.startsWith('DB_'))).toEqual([]);
    const definition = Object.values(fargate.template.findResources('AWS::ECS::TaskDefinition'))[0];
    const entries = (definition?.Properties.ContainerDefinitions[0].Environment ?? []) as {
      Name: string;
      Value: unknown;
    }[];
    const tableVariable = entries.find((entry) => entry.Name === 'DYNAMODB_TABLE');
    expect(tableVariable?.Value).toEqual({
      Ref: fargate.stack.getLogicalId(fargate.stack.worker.table?.table.node.defaultChild as ec2.CfnVPC),
    });
    expect(worker.store).toMatchObject({ kind: 'dynamodb', tableName: 'SqsInboxWorker-WorkerTable-1A2B3C' });
    expect(worker.database.kind).toBe('none');
    expect(poller.concurrency).toBe(10);
  });

  it('passes cdk-nag AwsSolutions with zero unacknowledged findings', () => {
    // Act
    const report = new AwsSolutionsChecks(fargate.app).validateScope(fargate.app);

    // Assess
    expect(report.violations.map((v) => v.ruleName)).toEqual([]);
  });

  it('needs a vpc for the tasks; the DynamoDB worker function still refuses one', () => {
    // Prepare
    const withVpc = (runtime: 'lambda' | 'fargate', vpc: boolean) => () => {
      const stack = new Stack(new App({ context: noBundling }), `Vpc-${runtime}-${vpc}`);
      new SqsDatabaseWorker(stack, 'Worker', {
        store: { kind: 'dynamodb' },
        runtime: { kind: runtime },
        alarms: 'none',
        production: false,
        ...(vpc ? { vpc: new ec2.Vpc(stack, 'Vpc') } : {}),
        // A vpc of your own picks the tasks' subnets (these reach AWS through a NAT gateway).
        ...(vpc && runtime === 'fargate'
          ? { vpcSubnets: { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS } }
          : {}),
      });
    };

    // Act / Assess
    expect(withVpc('fargate', false)).toThrow(
      'vpc is required with runtime "fargate" (the poller\'s tasks run in it, with store "dynamodb" too)',
    );
    expect(withVpc('lambda', true)).toThrow('vpc is given with store "dynamodb"');
    expect(withVpc('fargate', true)).not.toThrow();
    expect(withVpc('lambda', false)).not.toThrow();
  });
});

describe('Runtime fargate with tracing: the X-Ray daemon beside the poller', () => {
  const traced = synth({ tracing: true });
  const untraced = synth();
  const [definition] = Object.values(traced.template.findResources('AWS::ECS::TaskDefinition')) as {
    Properties: {
      TaskRoleArn: { 'Fn::GetAtt': [string] };
      ContainerDefinitions: Record<string, unknown>[];
    };
  }[];
  const containers = definition?.Properties.ContainerDefinitions ?? [];

  it('runs the daemon as a non-essential sidecar on UDP 2000, started before the poller, which traces to it', () => {
    // Assess
    expect(containers.map((container) => container.Name)).toEqual(['Poller', 'XRayDaemon']);
    const [poller, daemon] = containers;
    expect(daemon).toMatchObject({
      Essential: false,
      Memory: 64,
      ReadonlyRootFilesystem: true,
      PortMappings: [{ ContainerPort: 2000, Protocol: 'udp' }],
      Command: ['--region', { Ref: 'AWS::Region' }, '--buffer-memory', '16'],
      LogConfiguration: { LogDriver: 'awslogs' },
    });
    expect(poller).toMatchObject({
      Essential: true,
      DependsOn: [{ ContainerName: 'XRayDaemon', Condition: 'START' }],
    });
    const env = containerEnvironment(traced.template);
    expect(env).toMatchObject({
      POWERTOOLS_TRACE_ENABLED: 'true',
      AWS_XRAY_DAEMON_ADDRESS: '127.0.0.1:2000',
    });
    expect(loadPollerConfig(env).worker.tracing).toBe(true);
    // Untraced: one container, no tracing variable.
    const [plain] = Object.values(untraced.template.findResources('AWS::ECS::TaskDefinition'));
    expect(plain?.Properties.ContainerDefinitions.map((c: { Name: string }) => c.Name)).toEqual(['Poller']);
    expect(containerEnvironment(untraced.template)).not.toHaveProperty('POWERTOOLS_TRACE_ENABLED');
  });

  it('builds the daemon from AWS’s image into the asset repository (isolated subnets reach ECR, not ECR Public)', () => {
    // Act
    const assembly = traced.app.synth();
    const assets = JSON.parse(readFileSync(join(assembly.directory, 'Fargate.assets.json'), 'utf8')) as {
      dockerImages: Record<string, { source: { directory: string; platform?: string } }>;
    };
    const dockerfiles = Object.values(assets.dockerImages).map((image) =>
      readFileSync(join(assembly.directory, image.source.directory, 'Dockerfile'), 'utf8'),
    );

    // Assess: two images, the poller's and the daemon's, both arm64
    expect(dockerfiles).toHaveLength(2);
    expect(
      dockerfiles.some((text) => /^FROM public\.ecr\.aws\/xray\/aws-xray-daemon:3\.x$/m.test(text)),
    ).toBe(true);
    expect(Object.values(assets.dockerImages).map((image) => image.source.platform)).toEqual([
      'linux/arm64',
      'linux/arm64',
    ]);
  });

  it('grants the task role the daemon’s X-Ray writes and sampling reads, and the subnets an X-Ray endpoint the service waits for', () => {
    // Prepare
    const taskRole = definition?.Properties.TaskRoleArn['Fn::GetAtt'][0];
    const statements = Object.values(traced.template.findResources('AWS::IAM::Policy'))
      .filter((policy) =>
        (policy.Properties.Roles as { Ref: string }[]).some((role) => role.Ref === taskRole),
      )
      .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Record<string, unknown>[]);
    const endpointIds = (template: Template) =>
      Object.entries(template.findResources('AWS::EC2::VPCEndpoint'))
        .filter(([, endpoint]) => JSON.stringify(endpoint.Properties.ServiceName).includes('.xray'))
        .map(([id]) => id);

    // Assess
    expect(statements.find((statement) => statement.Sid === 'XRayDaemonWrites')).toEqual({
      Sid: 'XRayDaemonWrites',
      Effect: 'Allow',
      Action: [
        'xray:PutTraceSegments',
        'xray:PutTelemetryRecords',
        'xray:GetSamplingRules',
        'xray:GetSamplingTargets',
        'xray:GetSamplingStatisticSummaries',
      ],
      Resource: '*',
    });
    const [xrayEndpoint] = endpointIds(traced.template);
    expect(xrayEndpoint).toBeDefined();
    const [service] = Object.values(traced.template.findResources('AWS::ECS::Service')) as {
      DependsOn: string[];
    }[];
    expect(service?.DependsOn).toContain(xrayEndpoint);
    // Neither an untraced poller nor a traced Lambda worker (Lambda sends its traces itself) pays for one.
    expect(endpointIds(untraced.template)).toEqual([]);
    const lambda = new SqsInboxWorkerStack(new App({ context: noBundling }), 'TracedLambda', {
      worker: { tracing: true, alarms: 'none', queueIdentity: DEPLOYED_QUEUES },
    });
    expect(endpointIds(Template.fromStack(lambda))).toEqual([]);
  });

  it('passes cdk-nag AwsSolutions with zero unacknowledged findings', () => {
    // Act
    const report = new AwsSolutionsChecks(traced.app).validateScope(traced.app);

    // Assess
    expect(report.violations.map((v) => `${v.ruleName}: ${v.violatingResources.length}`)).toEqual([]);
  });
});

describe('Runtime fargate: synth-time errors', () => {
  it.each([
    [
      'a lease too short for the heartbeat at its half',
      { pollerVisibility: Duration.seconds(8), pollerStopTimeout: Duration.seconds(4) },
      "pollerVisibility (8 s) is shorter than the heartbeat needs: the poller extends a running record's lease at half of it (4 s in), which must come at least 5 s before the lease ends or SQS hands the record to another task first; raise pollerVisibility to 10 s or more",
    ],
    [
      'a maximum extension beyond 12 h',
      { pollerMaxExtension: Duration.hours(13) },
      "pollerMaxExtension (46800 s) + pollerVisibility (60 s) = 46860 s exceeds 43140 s: SQS keeps a message invisible for 12 h (43200 s) at most from its receive, and the poller's heartbeat stops 60 s short of it; lower pollerMaxExtension to 43080 s or less",
    ],
    [
      'a queue visibility timeout shorter than the lease',
      { visibilityTimeout: Duration.seconds(30) },
      "visibilityTimeout (30 s) is shorter than pollerVisibility (60 s): a receive that takes the queue's default (an operator's, or a poller that does not pass its lease) would give a record back before its first heartbeat at 30 s; raise visibilityTimeout to 60 s or leave it out (it defaults to pollerVisibility)",
    ],
    [
      'a drain longer than half the lease',
      { pollerStopTimeout: Duration.seconds(45) },
      'pollerStopTimeout (45 s) exceeds half of pollerVisibility (60 s): a running record has only half a lease left at worst (the heartbeat renews it at half), so a drain this long could still commit a record SQS has already handed to another task; lower pollerStopTimeout to 30 s or raise pollerVisibility to 90 s',
    ],
    [
      'a drain beyond what Fargate waits before SIGKILL',
      { pollerStopTimeout: Duration.seconds(115), pollerVisibility: Duration.seconds(300) },
      'pollerStopTimeout (115 s) + 10 s to hand records back and close is 125 s, above the 120 s Fargate allows a container to stop (ECS stopTimeout) before SIGKILL; lower pollerStopTimeout to 110 s or less',
    ],
    [
      'more tasks than the database has connections for',
      { maxTasks: 8 },
      'maxTasks (8) × dbPoolSize connections exceeds what the database has for the worker: safe worker concurrency 7, bound by db_connections (db_available_connections 70 / connection_per_worker 10); lower maxTasks to 7 or less, or raise the binding capacity input',
    ],
    [
      'a capacity that cannot carry one task',
      { dbMaxConnections: 20, dbReservedConnections: 15 },
      'not even one Fargate task fits: the safe worker concurrency is 0 (safe worker concurrency 0, bound by db_connections (db_available_connections 5 / connection_per_worker 10)), and one task holds dbPoolSize connections; lower dbPoolSize or raise the binding capacity input (dbMaxConnections, dbReservedConnections, …)',
    ],
    [
      'more tasks always on than the capacity allows',
      { minTasks: 9 },
      'minTasks (9) must not exceed maxTasks (7, from the capacity formula); lower minTasks or raise the binding capacity input',
    ],
    [
      'a receive batch above what SQS returns',
      { batchSize: 20 },
      'batchSize (20) must be a whole number from 1 to 10 with runtime "fargate" (POLLER_BATCH_SIZE: one ReceiveMessage returns 10 messages at most); lower batchSize',
    ],
    [
      'a memory Fargate does not offer with the CPU',
      { taskCpu: 256, taskMemoryMiB: 4096 },
      'taskMemoryMiB (4096) is not a memory Fargate allows with taskCpu 256: 512 to 2048 MiB in steps of 512; set one of those or another taskCpu',
    ],
    [
      'a payload limit the task memory cannot hold for the records in flight',
      { maxPayloadBytes: 16 * 1024 * 1024 },
      'maxPayloadBytes (16777216 bytes) is more than taskMemoryMiB (1024 MiB) can hold: 10 records in flight (recordConcurrency 10) × 16 MiB × 11 (peak memory per byte of a JSON payload, measured: docs/performance.md) + 64 MiB (the worker) = 1824 MiB; lower maxPayloadBytes to 9151208 bytes or less, raise taskMemoryMiB to 1824 MiB, or lower recordConcurrency',
    ],
    [
      'a payload limit that fits the task only without the X-Ray daemon beside the poller',
      { tracing: true, maxPayloadBytes: 8.5 * 1024 * 1024 },
      'maxPayloadBytes (8912896 bytes) is more than taskMemoryMiB (1024 MiB) can hold: 10 records in flight (recordConcurrency 10) × 8.5 MiB × 11 (peak memory per byte of a JSON payload, measured: docs/performance.md) + 64 MiB (the worker) + 64 MiB (the X-Ray daemon beside it, tracing) = 1063 MiB; lower maxPayloadBytes to 8541128 bytes or less, raise taskMemoryMiB to 1063 MiB, or lower recordConcurrency',
    ],
    [
      'more records at once than the DynamoDB store runs',
      { store: 'dynamodb', recordConcurrency: 11, maxWriteUnitsPerSecond: 40_000 },
      'recordConcurrency (11) must be a whole number from 1 to 10 with store "dynamodb" (WORKER_RECORD_CONCURRENCY: the worker runs at most 10 records of a batch at once); lower recordConcurrency to 10 or less',
    ],
    [
      'more DynamoDB tasks than the table budget carries',
      { store: 'dynamodb', maxTasks: 3 },
      "maxTasks (3) tasks of recordConcurrency records each write more than the table's budget for the worker: safe worker concurrency 1, bound by write_units (max_write_units_per_second 4000 / (write_units_per_message 5 × messages_per_second_per_worker 666.67)); lower maxTasks to 1 or less, or raise maxWriteUnitsPerSecond",
    ],
    [
      "an adaptive limit's floor above the poller's concurrency",
      { recordConcurrency: 4, concurrencyFloor: 5 },
      "concurrencyFloor (5) must not exceed the poller's concurrency (recordConcurrency 4, POLLER_CONCURRENCY): its adaptive limit moves the records in flight between the two; lower concurrencyFloor or raise recordConcurrency",
    ],
    [
      'a floor with the adaptive limit turned off',
      { adaptiveConcurrency: false, concurrencyFloor: 2 },
      'concurrencyFloor (2) is set while adaptiveConcurrency is false: no limit moves, so none has a floor; remove concurrencyFloor or remove adaptiveConcurrency: false',
    ],
    [
      'a Lambda-only prop',
      { maxConcurrency: 10 },
      'maxConcurrency (10) applies only to runtime "lambda" (given runtime "fargate"); remove maxConcurrency',
    ],
  ] as const)('refuses %s, naming the value and the fix', (_case, worker, message) => {
    expect(() => synth(worker as SqsInboxWorkerStackProps['worker'])).toThrow(message);
  });

  it('accepts that payload limit without tracing: the daemon’s memory is the difference', () => {
    expect(() => synth({ maxPayloadBytes: 8.5 * 1024 * 1024 })).not.toThrow();
  });

  it('collects every problem in one error', () => {
    expect(() =>
      synth({
        pollerStopTimeout: Duration.seconds(45),
        maxTasks: 8,
        visibilityTimeout: Duration.seconds(30),
      }),
    ).toThrow(/has 3 unsafe setting\(s\)/);
  });

  it('refuses the Fargate props on the Lambda runtime', () => {
    const app = new App({ context: noBundling });
    expect(
      () =>
        new SqsInboxWorkerStack(app, 'Lambda', {
          worker: { alarms: 'none', production: false, minTasks: 2, taskCpu: 1024 },
        }),
    ).toThrow(
      'minTasks (2) applies only to runtime "fargate" (given runtime "lambda"); remove minTasks or set runtime "fargate"',
    );
  });

  it('accepts the largest drain Fargate allows once the lease covers it', () => {
    // Act
    const { template } = synth({
      pollerStopTimeout: Duration.seconds(110),
      pollerVisibility: Duration.seconds(220),
    });

    // Assess
    template.hasResourceProperties('AWS::ECS::TaskDefinition', {
      ContainerDefinitions: [Match.objectLike({ StopTimeout: 120 })],
    });
  });

  it('derives more tasks from a larger database, and honours minTasks', () => {
    // Act: (400 − 40) / 12 = 30 tasks of 12 connections
    const { template } = synth({
      dbMaxConnections: 400,
      dbReservedConnections: 40,
      dbPoolSize: 12,
      minTasks: 2,
    });

    // Assess
    template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalableTarget', {
      MinCapacity: 2,
      MaxCapacity: 30,
    });
    template.hasResourceProperties('AWS::ECS::Service', {
      DeploymentConfiguration: Match.objectLike({ MaximumPercent: 100, MinimumHealthyPercent: 50 }),
    });
    // The proxy takes what the tasks can open plus the relay and the migration: ⌈100 × (30 × 12 + 2) / 400⌉.
    template.hasResourceProperties('AWS::RDS::DBProxyTargetGroup', {
      ConnectionPoolConfigurationInfo: Match.objectLike({ MaxConnectionsPercent: 91 }),
    });
  });
});

describe('Class: PollerService', () => {
  it('lets the task decrypt a queue encrypted with a KMS key, with that key only', () => {
    // Prepare
    const stack = new Stack(new App(), 'Kms');
    const vpc = new ec2.Vpc(stack, 'Vpc', { natGateways: 0 });
    const key = new kms.Key(stack, 'Key');
    const queue = new sqs.Queue(stack, 'Queue', {
      encryption: sqs.QueueEncryption.KMS,
      encryptionMasterKey: key,
    });
    const problems: string[] = [];
    const settings = resolvePollerSettings(
      { runtime: 'fargate' },
      Duration.seconds(60),
      undefined,
      false,
      problems,
    );

    // Act
    const poller = new PollerService(stack, 'Poller', {
      vpc,
      vpcSubnets: { subnetType: ec2.SubnetType.PRIVATE_ISOLATED },
      queue,
      settings,
      environment: {},
      imageDirectory: join(import.meta.dirname, '../..'),
    });

    // Assess
    expect(problems).toEqual([]);
    const template = Template.fromStack(stack);
    const roleId = stack.getLogicalId(poller.taskRole.node.defaultChild as never);
    const statements = Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((policy) => (policy.Properties.Roles as { Ref: string }[]).some((role) => role.Ref === roleId))
      .flatMap(
        (policy) => policy.Properties.PolicyDocument.Statement as { Action: unknown; Resource: unknown }[],
      );
    expect(statements.find((s) => s.Action === 'kms:Decrypt')).toEqual({
      Action: 'kms:Decrypt',
      Effect: 'Allow',
      Resource: { 'Fn::GetAtt': [stack.getLogicalId(key.node.defaultChild as kms.CfnKey), 'Arn'] },
    });
  });
});

describe('Stage fargate of cdk.json', () => {
  it('synthesizes the poller service with the dev-sized database and no worker function', () => {
    // Prepare
    const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as {
      context: { stages: Record<string, unknown> };
    };
    const app = new App({ context: { ...noBundling, stage: 'fargate' } });

    // Act
    const stack = new SqsInboxWorkerStack(app, 'SqsInboxWorker-fargate', {
      worker: stageSettings('fargate', cdkJson.context.stages.fargate),
    });
    const template = Template.fromStack(stack);

    // Assess
    expect(stack.worker.settings.runtime).toBe('fargate');
    template.resourceCountIs('AWS::ECS::Service', 1);
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 0);
    template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalableTarget', {
      MinCapacity: 1,
      MaxCapacity: 7,
    });
    expect(new AwsSolutionsChecks(app).validateScope(app).violations).toEqual([]);
  });

  it('synthesizes stage fargate-dynamodb: the poller on the table, one task of 10 records (the write budget), no database', () => {
    // Prepare
    const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as {
      context: { stages: Record<string, unknown> };
    };
    const app = new App({ context: { ...noBundling, stage: 'fargate-dynamodb' } });

    // Act
    const stack = new SqsInboxWorkerStack(app, 'SqsInboxWorker-fargate-dynamodb', {
      worker: stageSettings('fargate-dynamodb', cdkJson.context.stages['fargate-dynamodb']),
    });
    const template = Template.fromStack(stack);

    // Assess
    expect(stack.worker.settings).toMatchObject({
      runtime: 'fargate',
      store: 'dynamodb',
      recordConcurrency: 10,
    });
    template.resourceCountIs('AWS::ECS::Service', 1);
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    template.resourceCountIs('AWS::RDS::DBProxy', 0);
    template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalableTarget', {
      MinCapacity: 1,
      MaxCapacity: 1,
    });
    expect(new AwsSolutionsChecks(app).validateScope(app).violations).toEqual([]);
  });

  it('reads the poller settings of a stage in seconds, and refuses an unknown one', () => {
    // Act
    const props = stageSettings('fargate', {
      runtime: 'fargate',
      pollerVisibilitySeconds: 120,
      pollerStopTimeoutSeconds: 50,
      pollerMaxExtensionSeconds: 3600,
      pollerWaitTimeSeconds: 10,
      minTasks: 2,
      maxTasks: 4,
      taskCpu: 1024,
      taskMemoryMiB: 2048,
    });

    // Assess
    expect(props.pollerVisibility?.toSeconds()).toBe(120);
    expect(props.pollerStopTimeout?.toSeconds()).toBe(50);
    expect(props.pollerMaxExtension?.toSeconds()).toBe(3600);
    expect(props.pollerWaitTime?.toSeconds()).toBe(10);
    expect(props).toMatchObject({
      runtime: 'fargate',
      minTasks: 2,
      maxTasks: 4,
      taskCpu: 1024,
      taskMemoryMiB: 2048,
    });
    expect(() => stageSettings('fargate', { pollerLeaseSeconds: 60 })).toThrow(
      'stages.fargate.pollerLeaseSeconds is not a known setting',
    );
    expect(() => synthRuntime('ecs')).toThrow(
      'runtime ("ecs") must be "lambda" or "fargate"; set one of them',
    );
  });
});

function synthRuntime(runtime: string) {
  const app = new App({ context: noBundling });
  return new SqsInboxWorkerStack(app, 'Runtime', {
    worker: { ...stageSettings('x', { runtime, alarms: 'none', production: false }) },
  });
}
