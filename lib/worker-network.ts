import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct, DependencyGroup } from 'constructs';

/** Properties of {@link WorkerNetwork}. */
export interface WorkerNetworkProps {
  /** Availability zones, 2 or 3 (RDS needs two for its subnet group and multi-AZ). @default 2 */
  readonly maxAzs?: number;
  /** Retention of the VPC flow logs. @default logs.RetentionDays.THREE_MONTHS */
  readonly flowLogRetention?: logs.RetentionDays;
  /**
   * Add what Fargate tasks need from isolated subnets (the worker's `runtime: 'fargate'`): ECR API and Docker
   * interface endpoints (image layers come through the S3 gateway endpoint every network has), and a CloudWatch
   * Logs interface endpoint (the tasks' `awslogs` driver). Three more interface endpoints cost ~$0.01 per AZ per hour each (docs/deploy.md).
   * @default false
   */
  readonly containerEndpoints?: boolean;
  /**
   * The worker's store. `dynamodb` is the network of a DynamoDB worker's poller (`runtime: 'fargate'`; a DynamoDB
   * worker function needs none): a DynamoDB gateway endpoint (no hourly charge) instead of the Secrets Manager,
   * Lambda and CloudWatch interface endpoints, which only the PostgreSQL store's functions use (the master secret,
   * the breaker and its control loop of the mapping's MaximumConcurrency).
   * @default 'postgres'
   */
  readonly store?: 'postgres' | 'dynamodb';
  /**
   * An X-Ray interface endpoint: the X-Ray daemon beside a traced poller (`runtime: 'fargate'`, `tracing: true`)
   * sends its segments from the isolated subnets (~$0.01 per AZ per hour, docs/deploy.md). A traced function needs
   * none: Lambda sends its traces itself.
   * @default false
   */
  readonly tracingEndpoint?: boolean;
}

/**
 * A VPC with private isolated subnets only (no internet, no NAT), flow logs of all traffic to CloudWatch Logs,
 * and the endpoints the functions need from inside: SQS (the worker changes message visibility, the relay sends),
 * Secrets Manager (the migration function and the rotation function read the master secret), Lambda (the breaker
 * disables and enables the worker's event source mapping), CloudWatch monitoring (the breaker reads the worker's
 * metrics to set the mapping's MaximumConcurrency) and an S3 gateway (payload objects by reference). With
 * `store: 'dynamodb'` (the poller's network): SQS, the S3 gateway and a DynamoDB gateway.
 */
export class WorkerNetwork extends Construct {
  /** The VPC. */
  readonly vpc: ec2.Vpc;
  /** Subnets of the database, the proxy and the functions. */
  readonly subnets: ec2.SubnetSelection = { subnetType: ec2.SubnetType.PRIVATE_ISOLATED };
  /**
   * The endpoints of `containerEndpoints` and `tracingEndpoint` (empty without): a service whose tasks start in these
   * subnets depends on them, or its first tasks may fail to pull their image and roll the deploy back.
   */
  readonly containerEndpoints = new DependencyGroup();

  constructor(scope: Construct, id: string, props: WorkerNetworkProps = {}) {
    super(scope, id);
    const flowLogGroup = new logs.LogGroup(this, 'FlowLogs', {
      retention: props.flowLogRetention ?? logs.RetentionDays.THREE_MONTHS,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.vpc = new ec2.Vpc(this, 'Vpc', {
      maxAzs: props.maxAzs ?? 2,
      natGateways: 0,
      subnetConfiguration: [{ name: 'isolated', subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: 24 }],
      flowLogs: {
        all: {
          destination: ec2.FlowLogDestination.toCloudWatchLogs(flowLogGroup),
          trafficType: ec2.FlowLogTrafficType.ALL,
        },
      },
    });
    const containerEndpoints = [
      ['EcrApiEndpoint', ec2.InterfaceVpcEndpointAwsService.ECR],
      ['EcrDockerEndpoint', ec2.InterfaceVpcEndpointAwsService.ECR_DOCKER],
      ['LogsEndpoint', ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_LOGS],
    ] as const;
    // S3 from the isolated subnets: the worker reads `payloadRef` objects, the relay offloads large payloads and ECR
    // serves a Fargate task's image layers from S3. A gateway endpoint on the subnets' route tables, no hourly charge.
    const s3Endpoint = this.vpc.addGatewayEndpoint('S3Endpoint', {
      service: ec2.GatewayVpcEndpointAwsService.S3,
      subnets: [this.subnets],
    });
    if (props.containerEndpoints) this.containerEndpoints.add(s3Endpoint);
    const dynamo = props.store === 'dynamodb';
    if (dynamo) {
      // The poller's table calls from the isolated subnets: a gateway endpoint on their route tables.
      const dynamoEndpoint = this.vpc.addGatewayEndpoint('DynamoDbEndpoint', {
        service: ec2.GatewayVpcEndpointAwsService.DYNAMODB,
        subnets: [this.subnets],
      });
      if (props.containerEndpoints) this.containerEndpoints.add(dynamoEndpoint);
    }
    const postgresEndpoints = [
      ['SecretsManagerEndpoint', ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER],
      ['LambdaEndpoint', ec2.InterfaceVpcEndpointAwsService.LAMBDA],
      // The breaker's control loop of the mapping's MaximumConcurrency reads the worker's metrics (GetMetricData).
      ['MonitoringEndpoint', ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_MONITORING],
    ] as const;
    const tracingEndpoints = [['XRayEndpoint', ec2.InterfaceVpcEndpointAwsService.XRAY]] as const;
    for (const [name, service] of [
      ['SqsEndpoint', ec2.InterfaceVpcEndpointAwsService.SQS],
      ...(dynamo ? [] : postgresEndpoints),
      ...(props.containerEndpoints ? containerEndpoints : []),
      ...(props.tracingEndpoint ? tracingEndpoints : []),
    ] as const) {
      const endpoint = this.vpc.addInterfaceEndpoint(name, {
        service,
        subnets: this.subnets,
        privateDnsEnabled: true,
      });
      if ([...containerEndpoints, ...tracingEndpoints].some(([id]) => id === name)) {
        this.containerEndpoints.add(endpoint);
      }
      Validations.of(endpoint).acknowledge({
        id: 'AwsSolutions-EC23',
        reason:
          'The endpoint security group admits HTTPS (443) from the VPC CIDR only; the rule cannot read the CIDR because it is a CloudFormation reference.',
      });
    }
  }
}
