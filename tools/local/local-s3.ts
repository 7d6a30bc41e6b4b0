import { S3Client } from '@aws-sdk/client-s3';

/**
 * Creates an AWS SDK S3 client for an explicit endpoint (the fauxqs emulator, which serves S3 on the same port as
 * SQS). Path-style requests (`http://host:port/bucket/key`): a loopback address has no bucket subdomains. A TCP
 * connection that does not open within 5 s fails the request.
 *
 * @example
 * ```ts
 * const s3 = s3ClientFor(localSqs.endpoint);
 * ```
 */
export function s3ClientFor(endpoint: string, region = 'us-east-1'): S3Client {
  return new S3Client({
    endpoint,
    region,
    forcePathStyle: true,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    requestHandler: { connectionTimeout: 5000 },
  });
}
