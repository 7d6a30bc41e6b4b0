import type { Logger } from '@aws-lambda-powertools/logger';
import type { S3Client } from '@aws-sdk/client-s3';
import { lazyClientResolver } from '../worker/lazy-client.ts';

/**
 * An S3 client, or a function that makes one when it is first needed. The function form lets an entry point
 * `import('@aws-sdk/client-s3')` lazily, so a cold start whose records carry no `payloadRef` never loads the SDK's
 * S3 code. Only `send` is used (GetObject).
 */
export type S3ClientSource = Pick<S3Client, 'send'> | (() => Promise<Pick<S3Client, 'send'>>);

/**
 * Returns a function that gives the client of `source`, making it once. A source that fails is logged
 * (`worker_s3_client_unavailable`) and resolves to `undefined` (the record is retried); the next call tries again.
 *
 * @internal
 */
export function s3ClientResolver(
  source: S3ClientSource | undefined,
  logger: Logger,
): () => Promise<Pick<S3Client, 'send'> | undefined> {
  return lazyClientResolver(source, logger, 'worker_s3_client_unavailable');
}
