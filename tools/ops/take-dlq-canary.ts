import { DeleteMessageCommand, type Message } from '@aws-sdk/client-sqs';
import type { SqsSender } from './collaborators.ts';
import { decodeMessage } from './decode-message.ts';
import { receiveBatch, releaseMessages } from './receive-batch.ts';

/** Receives per look at most: a DLQ with more messages is read in up to this many receives of 10. */
const MAX_RECEIVES = 10;

/** What {@link takeDlqCanary} found. */
export interface DlqCanary {
  /** The canary's message was in the DLQ. */
  readonly found: boolean;
  /** Its body equals the body that was sent. */
  readonly bodyIntact: boolean;
  /** It was deleted from the DLQ (after it was found). */
  readonly deleted: boolean;
}

/**
 * Looks for the message whose envelope carries `key` in the DLQ and deletes it there (the smoke's own message);
 * every other message it received is made visible again at once (`ChangeMessageVisibility` 0), untouched. A DLQ has
 * no redrive policy, so the extra receive changes nothing but the messages' receive counts.
 *
 * @internal
 */
export async function takeDlqCanary(
  sqs: SqsSender,
  dlqUrl: string,
  key: string,
  body: string,
): Promise<DlqCanary> {
  const others: Message[] = [];
  let ours: Message | undefined;
  try {
    for (let i = 0; i < MAX_RECEIVES && !ours; i += 1) {
      const messages = await receiveBatch(sqs, dlqUrl, { max: 10, visibilitySeconds: 30, waitSeconds: 0 });
      if (messages.length === 0) break;
      for (const message of messages) {
        if (!ours && decodeMessage(message.Body).idempotencyKey === key) ours = message;
        else others.push(message);
      }
    }
  } finally {
    await releaseMessages(sqs, dlqUrl, others);
  }
  if (!ours) return { found: false, bodyIntact: false, deleted: false };
  await sqs.send(new DeleteMessageCommand({ QueueUrl: dlqUrl, ReceiptHandle: ours.ReceiptHandle }));
  return { found: true, bodyIntact: ours.Body === body, deleted: true };
}
