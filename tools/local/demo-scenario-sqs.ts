import {
  ChangeMessageVisibilityBatchCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { queueCounts } from './local-queues.ts';

/**
 * Sends bodies to a queue, ten per SendMessageBatch.
 *
 * @internal
 */
export async function sendAll(sqs: SQSClient, queueUrl: string, bodies: readonly string[]): Promise<void> {
  for (let start = 0; start < bodies.length; start += 10) {
    const entries = bodies
      .slice(start, start + 10)
      .map((body, index) => ({ Id: String(index), MessageBody: body }));
    const result = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
    if (result.Failed?.length) {
      throw new Error(
        `SendMessageBatch to ${queueUrl} failed for ${result.Failed.length} entries: ${result.Failed[0]?.Message}`,
      );
    }
  }
}

/**
 * Reads every DLQ message and makes it visible again (the DLQ is left as it was).
 *
 * @internal
 */
export async function peekQueue(sqs: SQSClient, queueUrl: string): Promise<string[]> {
  const bodies: string[] = [];
  const handles: string[] = [];
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        VisibilityTimeout: 30,
      }),
    );
    if (Messages.length === 0) break;
    for (const message of Messages) {
      bodies.push(message.Body ?? '');
      handles.push(message.ReceiptHandle as string);
    }
  }
  for (let start = 0; start < handles.length; start += 10) {
    await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queueUrl,
        Entries: handles.slice(start, start + 10).map((handle, index) => ({
          Id: String(index),
          ReceiptHandle: handle,
          VisibilityTimeout: 0,
        })),
      }),
    );
  }
  return bodies;
}

/**
 * Calls `onProgress` about ten times a second with the messages settled so far: those `deleted` returns, and those
 * in the DLQ. Returns the function that stops it.
 *
 * @internal
 */
export function reportProgress(
  sqs: SQSClient,
  dlqUrl: string,
  total: number,
  deleted: () => number,
  onProgress?: (settled: number, total: number) => void,
): () => void {
  let dlqVisible = 0;
  const progress = setInterval(() => {
    queueCounts(sqs, dlqUrl)
      .then((counts) => {
        dlqVisible = counts.visible + counts.inFlight;
      })
      .catch(() => {});
    onProgress?.(Math.min(total, deleted() + dlqVisible), total);
  }, 100);
  return () => clearInterval(progress);
}
