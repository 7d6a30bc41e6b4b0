import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { describeError, type PollerLogger } from './poller-telemetry.ts';

/** A message to hand back to the queue with a visibility: a backoff, or 0 to release it unstarted. */
export interface VisibilityEntry {
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly visibilitySeconds: number;
}

/** A message to delete: its effect is committed. */
export interface DeleteEntry {
  readonly messageId: string;
  readonly receiptHandle: string;
}

/** What {@link settleMessages} did. */
export interface SettleResult {
  readonly deleted: number;
  readonly deleteFailures: number;
  readonly visibilityChanged: number;
}

/**
 * Settles messages with SQS the way the event source mapping does for Lambda: DeleteMessageBatch for the
 * committed ones and ChangeMessageVisibilityBatch for the others (10 entries per call: one call each for a
 * batch). A failed call or entry is logged and changes nothing else: a message not deleted is delivered again
 * and is then a duplicate; one whose visibility was not changed comes back when its lease ends.
 *
 * @internal
 */
export async function settleMessages(
  sqs: SQSClient,
  queueUrl: string,
  work: { readonly deletes: readonly DeleteEntry[]; readonly changes: readonly VisibilityEntry[] },
  logger: PollerLogger,
): Promise<SettleResult> {
  let deleted = 0;
  let deleteFailures = 0;
  let visibilityChanged = 0;
  const chunks = <T>(items: readonly T[]) =>
    Array.from({ length: Math.ceil(items.length / 10) }, (_, i) => items.slice(i * 10, i * 10 + 10));
  await Promise.all([
    ...chunks(work.deletes).map(async (chunk) => {
      try {
        const response = await sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: chunk.map((entry, index) => ({ Id: String(index), ReceiptHandle: entry.receiptHandle })),
          }),
        );
        deleted += response.Successful?.length ?? 0;
        for (const failed of response.Failed ?? []) {
          deleteFailures += 1;
          logger.warn('poller_delete_failed', {
            messageId: chunk[Number(failed.Id)]?.messageId,
            code: failed.Code,
          });
        }
      } catch (error) {
        deleteFailures += chunk.length;
        logger.warn('poller_delete_failed', {
          messageIds: chunk.map((entry) => entry.messageId),
          error: describeError(error),
        });
      }
    }),
    ...chunks(work.changes).map(async (chunk) => {
      try {
        const response = await sqs.send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: queueUrl,
            Entries: chunk.map((entry, index) => ({
              Id: String(index),
              ReceiptHandle: entry.receiptHandle,
              VisibilityTimeout: entry.visibilitySeconds,
            })),
          }),
        );
        visibilityChanged += response.Successful?.length ?? 0;
        for (const failed of response.Failed ?? []) {
          logger.warn('poller_visibility_change_failed', {
            messageId: chunk[Number(failed.Id)]?.messageId,
            code: failed.Code,
          });
        }
      } catch (error) {
        logger.warn('poller_visibility_change_failed', {
          messageIds: chunk.map((entry) => entry.messageId),
          error: describeError(error),
        });
      }
    }),
  ]);
  return { deleted, deleteFailures, visibilityChanged };
}
