import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import type { SqsSender } from './collaborators.ts';
import { OperationError } from './errors.ts';

/** The attributes of a queue the ops commands use. */
export interface QueueFacts {
  readonly queueUrl: string;
  readonly queueArn: string | undefined;
  readonly fifo: boolean;
  /** ApproximateNumberOfMessages: visible, waiting to be received. */
  readonly visible: number;
  /** ApproximateNumberOfMessagesNotVisible: received, not yet deleted (in flight). */
  readonly inFlight: number;
  /** ApproximateNumberOfMessagesDelayed. */
  readonly delayed: number;
  /** MessageRetentionPeriod in seconds. */
  readonly retentionSeconds: number;
  /** VisibilityTimeout in seconds. */
  readonly visibilityTimeoutSeconds: number;
  /** maxReceiveCount of the RedrivePolicy, when the queue has one. */
  readonly maxReceiveCount: number | undefined;
  /** deadLetterTargetArn of the RedrivePolicy, when the queue has one. */
  readonly deadLetterTargetArn: string | undefined;
}

const toInt = (value: string | undefined) => (value === undefined ? 0 : Number.parseInt(value, 10) || 0);

/**
 * Reads a queue's depth, retention and redrive policy with GetQueueAttributes.
 *
 * @throws OperationError naming the queue URL when SQS refuses (missing queue, no permission).
 */
export async function readQueueAttributes(sqs: SqsSender, queueUrl: string): Promise<QueueFacts> {
  let attributes: Record<string, string>;
  try {
    const response = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['All'] }),
    );
    attributes = (response.Attributes ?? {}) as Record<string, string>;
  } catch (error) {
    throw new OperationError(
      `GetQueueAttributes failed for ${queueUrl}: ${(error as Error).name}: ${(error as Error).message}. ` +
        'Check the queue URL (use the exact URL SQS returned), the region and your credentials (sqs:GetQueueAttributes).',
      { cause: error },
    );
  }
  let maxReceiveCount: number | undefined;
  let deadLetterTargetArn: string | undefined;
  if (attributes.RedrivePolicy) {
    try {
      const policy = JSON.parse(attributes.RedrivePolicy) as {
        maxReceiveCount?: number | string;
        deadLetterTargetArn?: string;
      };
      maxReceiveCount = policy.maxReceiveCount === undefined ? undefined : Number(policy.maxReceiveCount);
      deadLetterTargetArn = policy.deadLetterTargetArn;
    } catch {
      // an unreadable policy is reported as absent
    }
  }
  return {
    queueUrl,
    queueArn: attributes.QueueArn,
    fifo: attributes.FifoQueue === 'true' || queueUrl.endsWith('.fifo'),
    visible: toInt(attributes.ApproximateNumberOfMessages),
    inFlight: toInt(attributes.ApproximateNumberOfMessagesNotVisible),
    delayed: toInt(attributes.ApproximateNumberOfMessagesDelayed),
    retentionSeconds: toInt(attributes.MessageRetentionPeriod),
    visibilityTimeoutSeconds: toInt(attributes.VisibilityTimeout),
    maxReceiveCount,
    deadLetterTargetArn,
  };
}
