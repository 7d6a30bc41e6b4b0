import type { Logger } from '@aws-lambda-powertools/logger';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { lazyClientResolver } from '../worker/lazy-client.ts';

/**
 * An SQS client, or a function that makes one when it is first needed. The function form lets an entry point
 * `import('@aws-sdk/client-sqs')` lazily, so a cold start that never needs SQS does not load the SDK.
 */
export type SqsClientSource = SQSClient | (() => Promise<SQSClient>);

/**
 * Returns a function that gives the client of `source`, making it once. A source that fails to make its client
 * is logged (`worker_sqs_client_unavailable`) and resolves to `undefined`, so the caller goes on without SQS;
 * the next call tries again.
 *
 * @internal
 */
export function sqsClientResolver(
  source: SqsClientSource | undefined,
  logger: Logger,
): () => Promise<SQSClient | undefined> {
  return lazyClientResolver(source, logger, 'worker_sqs_client_unavailable');
}
