import type { Logger } from '@aws-lambda-powertools/logger';
import { ChangeMessageVisibilityBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';

/**
 * One visibility change: a reported record and when it should come back.
 *
 * @internal
 */
export interface VisibilityChange {
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly visibilitySeconds: number;
  /** The producer's trace id of the record, logged with a failed change. */
  readonly traceId?: string;
}

/**
 * Applies the backoff of the reported records with ChangeMessageVisibilityBatch (one call per 10 entries:
 * one call for a standard Lambda batch). A failing call, or failing entries, are logged and never change
 * an outcome: the record is reported either way and comes back after the queue's visibility timeout.
 *
 * @internal
 */
export async function changeVisibility(
  sqs: SQSClient,
  queueUrl: string,
  changes: readonly VisibilityChange[],
  logger: Logger,
): Promise<void> {
  for (let i = 0; i < changes.length; i += 10) {
    const chunk = changes.slice(i, i + 10);
    try {
      const response = await sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: queueUrl,
          Entries: chunk.map((change, index) => ({
            Id: String(index),
            ReceiptHandle: change.receiptHandle,
            VisibilityTimeout: change.visibilitySeconds,
          })),
        }),
      );
      for (const failed of response.Failed ?? []) {
        logger.warn('worker_visibility_change_failed', {
          messageId: chunk[Number(failed.Id)]?.messageId,
          traceId: chunk[Number(failed.Id)]?.traceId,
          code: failed.Code,
          senderFault: failed.SenderFault,
        });
      }
    } catch (error) {
      logger.warn('worker_visibility_change_failed', {
        messageIds: chunk.map((change) => change.messageId),
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      });
    }
  }
}
