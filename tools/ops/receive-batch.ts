import type { Message } from '@aws-sdk/client-sqs';
import { ChangeMessageVisibilityBatchCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SqsSender } from './collaborators.ts';

/**
 * Receives up to `max` (1–10) messages with every system and message attribute, holding them invisible for
 * `visibilitySeconds`. Long-polls `waitSeconds` so a short poll on a sparse queue does not read as empty.
 */
export async function receiveBatch(
  sqs: SqsSender,
  queueUrl: string,
  options: { max: number; visibilitySeconds: number; waitSeconds: number },
): Promise<Message[]> {
  const response = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: Math.max(1, Math.min(10, options.max)),
      VisibilityTimeout: options.visibilitySeconds,
      WaitTimeSeconds: options.waitSeconds,
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    }),
  );
  return response.Messages ?? [];
}

/**
 * Makes held messages visible again at once (ChangeMessageVisibility 0, in batches of 10). Returns how many
 * could not be released (their receipt handle expired; they become visible when their timeout ends).
 */
export async function releaseMessages(
  sqs: SqsSender,
  queueUrl: string,
  messages: readonly Message[],
): Promise<number> {
  let failed = 0;
  const handles = messages.filter((m) => m.ReceiptHandle);
  for (let i = 0; i < handles.length; i += 10) {
    const chunk = handles.slice(i, i + 10);
    try {
      const response = await sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: queueUrl,
          Entries: chunk.map((m, index) => ({
            Id: String(index),
            ReceiptHandle: m.ReceiptHandle as string,
            VisibilityTimeout: 0,
          })),
        }),
      );
      failed += response.Failed?.length ?? 0;
    } catch {
      failed += chunk.length;
    }
  }
  return failed;
}
