import { Duration, IgnoreMode, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as appscaling from 'aws-cdk-lib/aws-applicationautoscaling';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { PollerSettings } from './resolve-poller-settings.ts';

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
}

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
    this.taskRole = new iam.Role(this, 'TaskRole', {
      assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com'),
      description:
        props.store === 'dynamodb'
          ? 'sqs-inbox-worker poller: consumes the source queue and writes to the worker table'
          : 'sqs-inbox-worker poller: consumes the source queue and connects through the RDS Proxy',
    });
    this.taskRole.addToPolicy(
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
    props.queue.encryptionMasterKey?.grantDecrypt(this.taskRole);

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
    this.container = this.taskDefinition.addContainer('Poller', {
      // Fingerprinted at synth (the .dockerignore keeps node_modules, cdk.out, .git and tests out), built at
      // deploy. The build stage runs on the builder's platform and only the last stage is arm64, so an x86
      // machine builds it without emulation (see the Dockerfile).
      image: ecs.ContainerImage.fromAsset(props.imageDirectory, {
        platform: Platform.LINUX_ARM64,
        ignoreMode: IgnoreMode.DOCKER,
      }),
      essential: true,
      readonlyRootFilesystem: true,
      environment: { ...props.environment },
      stopTimeout: settings.containerStopTimeout,
      logging: ecs.LogDrivers.awsLogs({ logGroup: this.logGroup, streamPrefix: 'poller' }),
    });
    // EMF metrics reach CloudWatch through these logs: CloudWatch Logs extracts them from any log event (a
    // Lambda runtime is not needed), so the alarms on the worker's metrics work for the poller too.

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
}
