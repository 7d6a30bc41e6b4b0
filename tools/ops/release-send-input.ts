import type { SendMessageCommandInput } from '@aws-sdk/client-sqs';
import { OperationError } from './errors.ts';
import { toSendAttributes } from './to-send-attributes.ts';

/** What a quarantine release re-sends of a stored entry, whatever the store. */
export interface ReleasedEntry {
  readonly quarantineId: string;
  readonly occurrences: number;
  readonly body: string;
  readonly messageAttributes: unknown;
  readonly sqsAttributes: unknown;
}

/**
 * The SendMessage input of a quarantine release: the stored body and message attributes; for a FIFO queue the stored
 * group and a deduplication id of the entry's occurrence. `missingGroup` words the refusal of a FIFO release whose
 * entry has no group (each store says why it may lack one).
 *
 * @throws OperationError with `missingGroup`'s text when a FIFO queue's entry has no MessageGroupId.
 * @internal
 */
export function releaseSendInput(
  entry: ReleasedEntry,
  queueUrl: string,
  missingGroup: () => string,
): SendMessageCommandInput {
  const input: SendMessageCommandInput = {
    QueueUrl: queueUrl,
    MessageBody: entry.body,
    MessageAttributes: toSendAttributes(entry.messageAttributes),
  };
  if (queueUrl.endsWith('.fifo')) {
    const groupId = (entry.sqsAttributes as { MessageGroupId?: string }).MessageGroupId;
    if (!groupId) throw new OperationError(missingGroup());
    input.MessageGroupId = groupId;
    input.MessageDeduplicationId = `quarantine-${entry.quarantineId}-${entry.occurrences}`;
  }
  return input;
}
