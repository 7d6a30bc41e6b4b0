import { S3Client } from '@aws-sdk/client-s3';
import { type LocalComponent, localCredentials } from './iam/local-identities.ts';

/**
 * Creates an AWS SDK S3 client for an explicit endpoint (the fauxqs emulator, which serves S3 on the same port as
 * SQS). Path-style requests (`http://host:port/bucket/key`): a loopback address has no bucket subdomains. A TCP
 * connection that does not open within 5 s fails the request. It signs as `component` (see `sqsClientFor`).
 *
 * @example
 * ```ts
 * const s3 = s3ClientFor(localSqs.endpoint);
 * ```
 */
export function s3ClientFor(
  endpoint: string,
  region = 'us-east-1',
  component: LocalComponent = 'admin',
): S3Client {
  return new S3Client({
    endpoint,
    region,
    forcePathStyle: true,
    credentials: localCredentials(component),
    requestHandler: { connectionTimeout: 5000 },
  });
}
