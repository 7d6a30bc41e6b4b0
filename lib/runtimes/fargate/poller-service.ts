import { join } from 'node:path';
import { Duration, IgnoreMode, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as appscaling from 'aws-cdk-lib/aws-applicationautoscaling';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import { DockerImageAsset, Platform } from 'aws-cdk-lib/aws-ecr-assets';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { PROJECT_ROOT } from '../../bundled-function.ts';
import { imageCodeVersion } from '../../worker-code-version.ts';
import { type PollerSettings, XRAY_DAEMON_MEMORY_MIB } from './resolve-poller-settings.ts';

/**
 * Scaling steps on the source queue's visible messages (maximum over a minute), the steps of AWS's
 * `QueueProcessingFargateService` pattern: one task less while nothing waits, one more from 100 waiting, five
 * more from 500. The bounds (`minTasks`, `maxTasks`) come from the capacity formula, so the steps never take the
 * database past what it can carry.
 *
 * @internal
 */
export const QUEUE_DEPTH_SCALING_STEPS: readonly appscaling.ScalingInterval[] = [
  { upper: 0, change: -1 },
  { lower: 100, change: +1 },
  { lower: 500, change: +5 },
];

/** Props of {@link PollerService}; the values are decided and checked by `SqsDatabaseWorker`. */
export interface PollerServiceProps {
  /** VPC and subnets of the tasks: those of the database proxy, like the worker function's (PostgreSQL). */
  readonly vpc: ec2.IVpc;
  readonly vpcSubnets: ec2.SubnetSelection;
  /** The source queue: the only queue the task role may read the attributes of, receive from, delete from, extend. */
  readonly queue: sqs.IQueue;
  readonly settings: PollerSettings;
  /**
   * The worker's store: what the task role is for (its grants are its owner's: the proxy's, or the table's).
   * @default 'postgres'
   */
  readonly store?: 'postgres' | 'dynamodb';
  /** The container's environment (the worker's variables plus `WORKER_QUEUE_URL` and `POLLER_*`). */
  readonly environment: Readonly<Record<string, string>>;
  /**
   * Build context of the image: a folder with the `Dockerfile` and `.dockerignore`. Only fingerprinted at synth
   * (no Docker needed); the image is built at deploy.
   */
  readonly imageDirectory: string;
  /**
   * X-Ray tracing of the poller: the X-Ray daemon as a sidecar of the task (built from {@link XRAY_DAEMON_IMAGE_DIRECTORY}),
   * the poller's `POWERTOOLS_TRACE_ENABLED=true` and `AWS_XRAY_DAEMON_ADDRESS`, and the daemon's X-Ray writes and
   * sampling reads on the task role. The tasks' subnets must reach X-Ray (WorkerNetwork's `tracingEndpoint`).
   * @default false
   */
  readonly tracing?: boolean;
}

/** Build context of the X-Ray daemon's image (its `Dockerfile`: AWS's image, rebuilt into the asset repository). */
export const XRAY_DAEMON_IMAGE_DIRECTORY = join(PROJECT_ROOT, 'tools/build/xray-daemon');

/** Where the daemon listens in the task (containers of a Fargate task share its network namespace). */
export const XRAY_DAEMON_ADDRESS = '127.0.0.1:2000';

/**
 * The poller (`bin/poller.ts`) as an ECS Fargate service: a cluster with Container Insights (the running and
 * desired task counts its alarm reads), an arm64 task whose image is built at deploy from the project's
 * `Dockerfile`, a task role that may only read the source queue's attributes (the poller's first call: its ARN and
 * whether it is FIFO), receive, delete and extend the visibility of its messages (plus what its owner grants:
 * `rds-db:connect` as the worker's user, or the worker's table grants; the payload bucket), and step scaling on
 * queue depth between `minTasks` and `maxTasks`.
 *
 * A deploy replaces tasks one after another without ever running more than `maxTasks` (maximum healthy 100 %):
 * a rolling deploy at 200 % would open twice the connections the capacity formula allows. With one task, the old
 * one stops before the new one starts (the queue keeps the messages meanwhile). Stopping tasks get SIGTERM and
 * `POLLER_STOP_TIMEOUT_SECONDS` + 10 s before SIGKILL (`stopTimeout`).
 */
export class PollerService extends Construct {
  readonly cluster: ecs.Cluster;
  readonly taskDefinition: ecs.FargateTaskDefinition;
  readonly container: ecs.ContainerDefinition;
  /** The poller's image; its hash (the tag it is pushed with) is the container's `WORKER_VERSION`. */
  readonly image: DockerImageAsset;
  readonly service: ecs.FargateService;
  /** The role the poller's code runs as. */
  readonly taskRole: iam.Role;
  readonly logGroup: logs.LogGroup;
  readonly scaling: ecs.ScalableTaskCount;

  constructor(scope: Construct, id: string, props: PollerServiceProps) {
    super(scope, id);
    const { settings } = props;
    this.cluster = new ecs.Cluster(this, 'Cluster', {
      vpc: props.vpc,
      containerInsightsV2: ecs.ContainerInsights.ENABLED,
    });
    this.taskRole = this.createTaskRole(props);

    this.taskDefinition = new ecs.FargateTaskDefinition(this, 'Task', {
      cpu: settings.taskCpu,
      memoryLimitMiB: settings.taskMemoryMiB,
      taskRole: this.taskRole,
      runtimePlatform: {
        cpuArchitecture: ecs.CpuArchitecture.ARM64,
        operatingSystemFamily: ecs.OperatingSystemFamily.LINUX,
      },
    });
    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // Fingerprinted at synth (the .dockerignore keeps node_modules, cdk.out, .git and tests out), built at
    // deploy. The build stage runs on the builder's platform and only the last stage is arm64, so an x86
    // machine builds it without emulation (see the Dockerfile).
    this.image = new DockerImageAsset(this, 'Image', {
      directory: props.imageDirectory,
      platform: Platform.LINUX_ARM64,
      ignoreMode: IgnoreMode.DOCKER,
    });
    this.container = this.taskDefinition.addContainer('Poller', {
      image: ecs.ContainerImage.fromDockerImageAsset(this.image),
      essential: true,
      readonlyRootFilesystem: true,
      environment: {
        // Deploy correlation: the image's tag (its asset hash) on every log line, unless the environment names one.
        WORKER_VERSION: imageCodeVersion(this.image),
        ...props.environment,
        ...(props.tracing
          ? { POWERTOOLS_TRACE_ENABLED: 'true', AWS_XRAY_DAEMON_ADDRESS: XRAY_DAEMON_ADDRESS }
          : {}),
      },
      stopTimeout: settings.containerStopTimeout,
      logging: ecs.LogDrivers.awsLogs({ logGroup: this.logGroup, streamPrefix: 'poller' }),
    });
    // EMF metrics reach CloudWatch through these logs: CloudWatch Logs extracts them from any log event (a
    // Lambda runtime is not needed), so the alarms on the worker's metrics work for the poller too.
    if (props.tracing) this.addXRayDaemon();

    this.service = new ecs.FargateService(this, 'Service', {
      cluster: this.cluster,
      taskDefinition: this.taskDefinition,
      vpcSubnets: props.vpcSubnets,
      assignPublicIp: false,
      // No desiredCount: a deploy must not reset what scaling decided (the scalable target holds it at minTasks+).
      minHealthyPercent: settings.minTasks >= 2 ? 50 : 0,
      maxHealthyPercent: 100,
      circuitBreaker: { rollback: true },
      enableECSManagedTags: true,
      propagateTags: ecs.PropagatedTagSource.SERVICE,
    });
    this.scaling = this.service.autoScaleTaskCount({
      minCapacity: settings.minTasks,
      maxCapacity: settings.maxTasks,
    });
    this.scaling.scaleOnMetric('QueueDepth', {
      metric: props.queue.metricApproximateNumberOfMessagesVisible({
        statistic: cloudwatch.Stats.MAXIMUM,
        period: Duration.minutes(1),
      }),
      scalingSteps: [...QUEUE_DEPTH_SCALING_STEPS],
      adjustmentType: appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
    });

    this.acknowledgeFindings();
  }

  /** The role the poller's code runs as: it consumes the source queue, and its store's grant comes on top. */
  private createTaskRole(props: PollerServiceProps): iam.Role {
    const taskRole = new iam.Role(this, 'TaskRole', {
      assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com'),
      description:
        props.store === 'dynamodb'
          ? 'sqs-inbox-worker poller: consumes the source queue and writes to the worker table'
          : 'sqs-inbox-worker poller: consumes the source queue and connects through the RDS Proxy',
    });
    taskRole.addToPolicy(
      new iam.PolicyStatement({
        sid: 'ConsumeTheSourceQueue',
        actions: [
          'sqs:GetQueueAttributes',
          'sqs:ReceiveMessage',
          'sqs:ChangeMessageVisibility',
          'sqs:DeleteMessage',
        ],
        resources: [props.queue.queueArn],
      }),
    );
    // SSE-SQS queues need no key permission; a queue under a KMS key needs Decrypt to read its messages.
    props.queue.encryptionMasterKey?.grantDecrypt(taskRole);
    return taskRole;
  }

  /** cdk-nag findings of the task definition and its execution role, each with its reason. */
  private acknowledgeFindings(): void {
    Validations.of(this.taskDefinition).acknowledge({
      id: 'AwsSolutions-ECS2',
      reason:
        'The environment holds settings and resource names only (proxy endpoint or table name, queue URL, pool sizes, timings); the poller has no secret: it signs an IAM token per connection, and its AWS calls with the task role.',
    });
    const executionRole = this.taskDefinition.executionRole;
    if (executionRole) {
      Validations.of(executionRole).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          'The execution role pulls the image: ecr:GetAuthorizationToken has no resource-level permission (AWS requires "*"); the layer pulls are scoped to the asset repository.',
      });
    }
  }

  /**
   * The X-Ray daemon beside the poller: the poller's segments go to it over UDP on the task's loopback
   * ({@link XRAY_DAEMON_ADDRESS}), it batches them to X-Ray and proxies the sampling rules the poller's SDK polls.
   * Not essential: a daemon that stops costs the traces, never the poller. Its image is AWS's, rebuilt at deploy into
   * the stack's asset repository, which the tasks reach through the ECR endpoints (ECR Public, where AWS publishes
   * it, has no VPC endpoint). Its role's part: the writes and the sampling reads of AWS's `AWSXRayDaemonWriteAccess`,
   * which support no resource-level permission.
   */
  private addXRayDaemon(): void {
    const daemon = this.taskDefinition.addContainer('XRayDaemon', {
      image: ecs.ContainerImage.fromAsset(XRAY_DAEMON_IMAGE_DIRECTORY, { platform: Platform.LINUX_ARM64 }),
      essential: false,
      readonlyRootFilesystem: true,
      memoryLimitMiB: XRAY_DAEMON_MEMORY_MIB,
      // The image's entry point binds 0.0.0.0:2000 (UDP and TCP); these flags follow it. The region is given, as
      // a task has no EC2 instance metadata to read it from.
      command: ['--region', Stack.of(this).region, '--buffer-memory', '16'],
      portMappings: [{ containerPort: 2000, protocol: ecs.Protocol.UDP }],
      logging: ecs.LogDrivers.awsLogs({ logGroup: this.logGroup, streamPrefix: 'xray-daemon' }),
    });
    this.container.addContainerDependencies({
      container: daemon,
      condition: ecs.ContainerDependencyCondition.START,
    });
    this.taskRole.addToPolicy(
      new iam.PolicyStatement({
        sid: 'XRayDaemonWrites',
        actions: [
          'xray:PutTraceSegments',
          'xray:PutTelemetryRecords',
          'xray:GetSamplingRules',
          'xray:GetSamplingTargets',
          'xray:GetSamplingStatisticSummaries',
        ],
        resources: ['*'],
      }),
    );
    Validations.of(this.taskRole).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Tracing (the tracing prop, off by default): the X-Ray daemon writes segments and reads sampling rules; these X-Ray actions support no resource-level permissions, so AWS requires Resource "*" for them (as Tracing.ACTIVE grants a function). Granted on traced pollers only.',
    });
  }
}
