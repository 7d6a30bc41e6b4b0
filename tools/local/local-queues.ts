import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  type QueueAttributeName,
  type SQSClient,
} from '@aws-sdk/client-sqs';

/** Options of {@link createLocalQueues}. */
export interface LocalQueuesOptions {
  /** Name of the source queue (`.fifo` is appended for FIFO queues when missing). */
  readonly name: string;
  /** Create FIFO queues. @default false */
  readonly fifo?: boolean;
  /** Receives before SQS moves a message to the DLQ (RedrivePolicy). @default 5 */
  readonly maxReceiveCount?: number;
  /** Default visibility timeout of the source queue in seconds. @default 30 */
  readonly visibilityTimeoutSeconds?: number;
  /** FIFO only: let SQS derive the deduplication id from the body. @default false */
  readonly contentBasedDeduplication?: boolean;
}

/** The queues created by {@link createLocalQueues}. */
export interface LocalQueues {
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly dlqUrl: string;
  readonly dlqArn: string;
}

/** Approximate message counts of a queue. */
export interface QueueCounts {
  readonly visible: number;
  readonly inFlight: number;
  readonly delayed: number;
}

/**
 * Creates a source queue and its dead-letter queue the way the CDK stack does: the DLQ keeps messages longer
 * (14 days against 4) and the source queue's RedrivePolicy moves a message to the DLQ once it has been
 * received `maxReceiveCount` times without being deleted. Idempotent (CreateQueue returns existing queues).
 *
 * @example
 * ```ts
 * const { queueUrl, dlqUrl } = await createLocalQueues(sqs, { name: 'case-worker', maxReceiveCount: 3 });
 * ```
 */
export async function createLocalQueues(sqs: SQSClient, options: LocalQueuesOptions): Promise<LocalQueues> {
  const fifo = options.fifo ?? false;
  const base = options.name.replace(/\.fifo$/, '');
  const suffix = fifo ? '.fifo' : '';
  const fifoAttributes: Record<string, string> = fifo
    ? { FifoQueue: 'true', ContentBasedDeduplication: String(options.contentBasedDeduplication ?? false) }
    : {};
  const dlq = await sqs.send(
    new CreateQueueCommand({
      QueueName: `${base}-dlq${suffix}`,
      Attributes: { ...fifoAttributes, MessageRetentionPeriod: String(14 * 24 * 3600) },
    }),
  );
  const dlqUrl = dlq.QueueUrl as string;
  const dlqArn = await queueArn(sqs, dlqUrl);
  const queue = await sqs.send(
    new CreateQueueCommand({
      QueueName: `${base}${suffix}`,
      Attributes: {
        ...fifoAttributes,
        MessageRetentionPeriod: String(4 * 24 * 3600),
        VisibilityTimeout: String(options.visibilityTimeoutSeconds ?? 30),
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: dlqArn,
          maxReceiveCount: options.maxReceiveCount ?? 5,
        }),
      },
    }),
  );
  const queueUrl = queue.QueueUrl as string;
  return { queueUrl, queueArn: await queueArn(sqs, queueUrl), dlqUrl, dlqArn };
}

/** The ARN of a queue (GetQueueAttributes `QueueArn`). */
export async function queueArn(sqs: SQSClient, queueUrl: string): Promise<string> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
  );
  if (!Attributes?.QueueArn)
    throw new Error(`Queue ${queueUrl} reported no QueueArn; check the endpoint and queue URL`);
  return Attributes.QueueArn;
}

/** Approximate counts of visible, in-flight and delayed messages of a queue. */
export async function queueCounts(sqs: SQSClient, queueUrl: string): Promise<QueueCounts> {
  const names: QueueAttributeName[] = [
    'ApproximateNumberOfMessages',
    'ApproximateNumberOfMessagesNotVisible',
    'ApproximateNumberOfMessagesDelayed',
  ];
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: names }),
  );
  return {
    visible: Number(Attributes.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0),
    delayed: Number(Attributes.ApproximateNumberOfMessagesDelayed ?? 0),
  };
}

/** True when `queueUrl` holds no message: none visible, in flight or delayed ({@link queueCounts}). */
export async function queueIsEmpty(sqs: SQSClient, queueUrl: string): Promise<boolean> {
  const counts = await queueCounts(sqs, queueUrl);
  return counts.visible + counts.inFlight + counts.delayed === 0;
}
