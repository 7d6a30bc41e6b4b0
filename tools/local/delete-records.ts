import { DeleteMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import type { EventSourceMappingLogger, EventSourceMappingStats } from './event-source-mapping.ts';
import { describeError } from './run-invocation.ts';

/**
 * Deletes the records with DeleteMessageBatch, 10 per call, and returns how many SQS deleted. A failed entry or
 * call is counted in `deleteFailures` and logged: the message is delivered again.
 *
 * @internal
 */
export async function deleteRecords(
  sqs: SQSClient,
  queueUrl: string,
  records: readonly SQSRecord[],
  observe: { readonly stats: EventSourceMappingStats; readonly logger: EventSourceMappingLogger },
): Promise<number> {
  const { stats, logger } = observe;
  let deleted = 0;
  for (let start = 0; start < records.length; start += 10) {
    const chunk = records.slice(start, start + 10);
    try {
      const result = await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: chunk.map((record, index) => ({ Id: String(index), ReceiptHandle: record.receiptHandle })),
        }),
      );
      deleted += result.Successful?.length ?? 0;
      for (const failure of result.Failed ?? []) {
        stats.deleteFailures += 1;
        logger.warn('DeleteMessageBatch entry failed; the message will be delivered again', {
          messageId: chunk[Number(failure.Id)]?.messageId,
          code: failure.Code,
        });
      }
    } catch (error) {
      stats.deleteFailures += chunk.length;
      logger.warn('DeleteMessageBatch failed; the messages will be delivered again', {
        messageIds: chunk.map((record) => record.messageId),
        error: describeError(error),
      });
    }
  }
  return deleted;
}
