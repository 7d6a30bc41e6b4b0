import { randomBytes } from 'node:crypto';
import {
  type MessageAttributeValue,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll } from 'vitest';
import {
  createLocalQueues,
  type LocalQueues,
  type LocalQueuesOptions,
} from '../../tools/local/local-queues.ts';
import { startLocalSqs } from '../../tools/local/local-sqs.ts';

/** One message to send with {@link LocalQueueFixture.send}. */
export interface OutgoingMessage {
  readonly body: string;
  readonly groupId?: string;
  readonly deduplicationId?: string;
  readonly attributes?: Record<string, MessageAttributeValue>;
}

/** fauxqs for one test file, with helpers to create queues, send and read the DLQ. */
export interface LocalQueueFixture {
  readonly sqs: SQSClient;
  readonly endpoint: string;
  /** Creates a fresh queue + DLQ with a unique name. */
  queues(options?: Omit<LocalQueuesOptions, 'name'>): Promise<LocalQueues>;
  /** Sends messages with SendMessageBatch (10 per call), in order. */
  send(queueUrl: string, messages: readonly (string | OutgoingMessage)[]): Promise<void>;
  /** Receives every visible message of a queue (used for DLQs), leaving them in flight. */
  receiveAll(queueUrl: string): Promise<{ body: string; receiveCount: number; messageId: string }[]>;
  /**
   * When a message of the queue became visible again (epoch ms): at once when it waits to be received, its visibility
   * deadline once that passed while it is in flight; undefined while it is invisible (or gone). fauxqs moves an
   * expired message back only on a receive, so GetQueueAttributes alone still counts it in flight.
   */
  visibleSince(queueUrl: string, messageId: string): number | undefined;
}

/** Starts fauxqs for the calling test file and stops it after the file. */
export async function localQueueFixture(): Promise<LocalQueueFixture> {
  const local = await startLocalSqs();
  const sqs = local.client();
  afterAll(() => local.stop());
  return {
    sqs,
    endpoint: local.endpoint,
    queues: (options = {}) =>
      createLocalQueues(sqs, {
        visibilityTimeoutSeconds: 1,
        ...options,
        name: `q-${randomBytes(4).toString('hex')}`,
      }),
    async send(queueUrl, messages) {
      for (let start = 0; start < messages.length; start += 10) {
        const entries = messages.slice(start, start + 10).map((item, index) => {
          const message = typeof item === 'string' ? { body: item } : item;
          return {
            Id: String(index),
            MessageBody: message.body,
            ...(message.groupId ? { MessageGroupId: message.groupId } : {}),
            ...(message.deduplicationId ? { MessageDeduplicationId: message.deduplicationId } : {}),
            ...(message.attributes ? { MessageAttributes: message.attributes } : {}),
          };
        });
        const result = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
        if (result.Failed?.length)
          throw new Error(`SendMessageBatch failed: ${JSON.stringify(result.Failed)}`);
      }
    },
    visibleSince(queueUrl, messageId) {
      const state = local.inspectQueue(queueUrl.split('/').at(-1) ?? '')?.messages;
      if (state?.ready.some((message) => message.messageId === messageId)) return Date.now();
      const held = state?.inflight.find((entry) => entry.message.messageId === messageId);
      return held && held.visibilityDeadline <= Date.now() ? held.visibilityDeadline : undefined;
    },
    async receiveAll(queueUrl) {
      const received: { body: string; receiveCount: number; messageId: string }[] = [];
      for (;;) {
        const { Messages = [] } = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 0,
            VisibilityTimeout: 60,
            MessageSystemAttributeNames: ['All'],
          }),
        );
        if (Messages.length === 0) return received;
        for (const message of Messages) {
          received.push({
            body: message.Body ?? '',
            receiveCount: Number(message.Attributes?.ApproximateReceiveCount),
            messageId: message.MessageId ?? '',
          });
        }
      }
    },
  };
}
