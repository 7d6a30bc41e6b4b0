import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { SqsDatabaseWorker } from './sqs-database-worker.ts';
import type { SqsDatabaseWorkerProps } from './sqs-database-worker-props.ts';
import { WorkerNetwork } from './worker-network.ts';

/** Properties of {@link SqsInboxWorkerStack}. */
export interface SqsInboxWorkerStackProps extends StackProps {
  /** Props of the worker construct (the VPC comes from the stack). */
  readonly worker?: Omit<SqsDatabaseWorkerProps, 'vpc'>;
}

/**
 * The deployable stack: an isolated VPC ({@link WorkerNetwork}) and one {@link SqsDatabaseWorker}, with the
 * names operators need as outputs (queue URLs for the ops CLI, the proxy endpoint, the dashboard).
 */
export class SqsInboxWorkerStack extends Stack {
  /** The network. */
  readonly network: WorkerNetwork;
  /** The worker. */
  readonly worker: SqsDatabaseWorker;

  constructor(scope: Construct, id: string, props: SqsInboxWorkerStackProps = {}) {
    super(scope, id, props);
    this.network = new WorkerNetwork(this, 'Network');
    this.worker = new SqsDatabaseWorker(this, 'Worker', {
      ...props.worker,
      vpc: this.network.vpc,
      vpcSubnets: this.network.subnets,
    });
    new CfnOutput(this, 'QueueUrl', { value: this.worker.queue.queueUrl, description: 'Source queue' });
    new CfnOutput(this, 'DeadLetterQueueUrl', {
      value: this.worker.deadLetterQueue.queueUrl,
      description: 'DLQ',
    });
    new CfnOutput(this, 'WorkerFunctionName', { value: this.worker.workerFunction.functionName });
    new CfnOutput(this, 'EventSourceMappingUuid', {
      value: this.worker.eventSource.eventSourceMappingId,
      description: 'The worker event source mapping (sqs-worker breaker --mapping-uuid, WORKER_MAPPING_UUID)',
    });
    new CfnOutput(this, 'ProxyEndpoint', { value: this.worker.database.proxy.endpoint });
    new CfnOutput(this, 'AlarmTopicArn', { value: this.worker.alarmTopic.topicArn });
    new CfnOutput(this, 'DashboardName', { value: this.worker.dashboard.dashboardName });
  }
}
