/**
 * The parts of the AWS SDK's S3 client this package uses: the client, GetObject (reading a `payloadRef`) and
 * PutObject (offloading an outbox payload). Code that needs S3 imports this module with `import()`, never
 * `@aws-sdk/client-s3` itself: a dynamic import of the package would keep every export of it (its ~100 commands,
 * their schemas, the aggregated `S3` class and the waiters) in the bundle, where named exports let esbuild leave
 * the rest out (lib/bundled-function.ts, docs/performance.md).
 *
 * @internal
 */
export { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
