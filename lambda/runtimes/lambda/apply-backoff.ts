import type { Logger } from '@aws-lambda-powertools/logger';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { changeVisibility, type VisibilityChange } from '../../sqs/change-visibility.ts';
import { queueUrlFromArn } from '../../sqs/queue-url.ts';

/**
 * Sets the backoff visibility of reported records: resolves the queue URL of `eventSourceARN` (cached) and
 * changes the records' visibility in batches. Never throws: a failure is logged and the records come back after
 * the queue's visibility timeout instead.
 *
 * The engine imports this module with `import()` on the first failure that needs it, so the SQS client code it
 * pulls in is a separate chunk of the bundle and stays out of the cold start.
 *
 * @internal
 */
export async function applyBackoff(
  sqs: SQSClient,
  arn: string,
  changes: readonly VisibilityChange[],
  logger: Logger,
): Promise<void> {
  const queueUrl = await queueUrlFromArn(sqs, arn).catch((error: unknown) => {
    logger.warn('worker_queue_url_unresolved', { eventSourceARN: arn, error: String(error) });
    return undefined;
  });
  if (queueUrl) await changeVisibility(sqs, queueUrl, changes, logger);
}
