import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { ResolvedWorkerSettings } from './resolve-worker-settings.ts';

/** The source queue and its DLQ. */
export interface WorkerQueues {
  readonly queue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;
}

/**
 * The source queue and its DLQ, SQS-encrypted and TLS-only. In production the queues outlive the stack and a
 * replacement: what they hold (above all the DLQ, whose messages are incidents nobody has looked at yet) must not
 * go with a `cdk destroy` or a replaced queue.
 *
 * @internal
 */
export function createWorkerQueues(
  scope: Construct,
  settings: ResolvedWorkerSettings,
  production: boolean,
): WorkerQueues {
  const common = {
    removalPolicy: production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    fifo: settings.fifo ? true : undefined,
    contentBasedDeduplication: settings.fifo ? false : undefined,
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    maxMessageSizeBytes: settings.maxMessageSizeBytes,
  };
  const deadLetterQueue = new sqs.Queue(scope, 'DeadLetterQueue', {
    ...common,
    retentionPeriod: settings.dlqRetentionPeriod,
  });
  Validations.of(deadLetterQueue).acknowledge({
    id: 'AwsSolutions-SQS3',
    reason: 'This queue IS the dead-letter queue of the source queue; it needs no DLQ of its own.',
  });
  const queue = new sqs.Queue(scope, 'Queue', {
    ...common,
    retentionPeriod: settings.retentionPeriod,
    visibilityTimeout: settings.visibilityTimeout,
    deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: settings.maxReceiveCount },
  });
  return { queue, deadLetterQueue };
}
