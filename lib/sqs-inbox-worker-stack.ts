import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { SqsDatabaseWorker } from './sqs-database-worker.ts';
import type { StageProps } from './stage-settings.ts';
import { workerPropsFromSettings } from './worker-axes.ts';
import { WorkerNetwork } from './worker-network.ts';

/** Properties of {@link SqsInboxWorkerStack}. */
export interface SqsInboxWorkerStackProps extends StackProps {
  /**
   * Props of the worker construct (the VPC comes from the stack), plus `alarmTopicArn`: an existing topic that
   * receives the alarms (imported as `alarmTopic`).
   */
  readonly worker?: StageProps;
}

/**
 * The deployable stack: an isolated VPC ({@link WorkerNetwork}) and one {@link SqsDatabaseWorker}, with the
 * names operators need as outputs (queue URLs for the ops CLI, the proxy endpoint, the dashboard). With
 * `store: 'dynamodb'` there is no VPC (the worker runs outside one; a poller's network with `runtime: 'fargate'`) and
 * the table name replaces the proxy endpoint.
 */
export class SqsInboxWorkerStack extends Stack {
  /** The network (`store: 'postgres'`, or the poller's with `runtime: 'fargate'`; none for a DynamoDB function). */
  readonly network: WorkerNetwork | undefined;
  /** The worker. */
  readonly worker: SqsDatabaseWorker;

  constructor(scope: Construct, id: string, props: SqsInboxWorkerStackProps = {}) {
    super(scope, id, props);
    const { alarmTopicArn, ...worker } = props.worker ?? {};
    // The poller's tasks pull their image and write their logs from the isolated subnets: endpoints for that. A
    // DynamoDB worker function runs outside a VPC; its poller's tasks cannot.
    const fargate = worker.runtime === 'fargate';
    this.network =
      worker.store === 'dynamodb' && !fargate
        ? undefined
        : new WorkerNetwork(this, 'Network', {
            containerEndpoints: fargate,
            // The X-Ray daemon beside a traced poller sends from the isolated subnets too.
            tracingEndpoint: fargate && worker.tracing === true,
            ...(worker.store === 'dynamodb' ? { store: 'dynamodb' as const } : {}),
          });
    // A stage is flat (cdk.json); the construct's props put each setting on its axis.
    this.worker = new SqsDatabaseWorker(
      this,
      'Worker',
      workerPropsFromSettings({
        ...worker,
        alarmTopic: alarmTopicArn
          ? sns.Topic.fromTopicArn(this, 'AlarmTopic', alarmTopicArn)
          : worker.alarmTopic,
        ...(this.network && { vpc: this.network.vpc, vpcSubnets: this.network.subnets }),
      }),
    );
    new CfnOutput(this, 'QueueUrl', { value: this.worker.queue.queueUrl, description: 'Source queue' });
    new CfnOutput(this, 'DeadLetterQueueUrl', {
      value: this.worker.deadLetterQueue.queueUrl,
      description: 'DLQ',
    });
    const { workerFunction, eventSource, pollerService } = this.worker;
    if (workerFunction && eventSource) {
      new CfnOutput(this, 'WorkerFunctionName', { value: workerFunction.functionName });
      new CfnOutput(this, 'WorkerLogGroupName', {
        value: this.worker.workerLogGroup.logGroupName,
        description:
          "The worker function's log group (sqs-worker logs --stage …, the saved Logs Insights queries)",
      });
      new CfnOutput(this, 'EventSourceMappingUuid', {
        value: eventSource.eventSourceMappingId,
        description:
          'The worker event source mapping (sqs-worker breaker --mapping-uuid, WORKER_MAPPING_UUID)',
      });
    }
    if (pollerService) {
      if (this.network) pollerService.service.node.addDependency(this.network.containerEndpoints);
      new CfnOutput(this, 'PollerClusterName', { value: pollerService.cluster.clusterName });
      new CfnOutput(this, 'PollerServiceName', {
        value: pollerService.service.serviceName,
        description:
          'The poller ECS service (aws ecs describe-services --cluster <PollerClusterName> --services …)',
      });
      new CfnOutput(this, 'PollerLogGroupName', { value: pollerService.logGroup.logGroupName });
    }
    if (this.worker.database) {
      new CfnOutput(this, 'ProxyEndpoint', { value: this.worker.database.proxy.endpoint });
      new CfnOutput(this, 'ProxyName', {
        value: this.worker.database.proxy.dbProxyName,
        description:
          'The RDS Proxy (CloudWatch dimension ProxyName; sqs-worker smoke reads its pinned sessions)',
      });
    }
    if (this.worker.table) {
      new CfnOutput(this, 'TableName', {
        value: this.worker.table.table.tableName,
        description: 'DynamoDB table of the inbox, the domain items and the quarantine (DYNAMODB_TABLE)',
      });
    }
    new CfnOutput(this, 'AlarmTopicArn', { value: this.worker.alarmTopic.topicArn });
    if (this.worker.payloadBucket) {
      new CfnOutput(this, 'PayloadBucketName', {
        value: this.worker.payloadBucket.bucketName,
        description: 'Bucket of payloadRef payloads (offload target of the outbox)',
      });
    }
    new CfnOutput(this, 'DashboardName', { value: this.worker.dashboard.dashboardName });
  }
}
