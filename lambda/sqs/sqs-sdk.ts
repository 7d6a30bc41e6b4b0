/**
 * The part of the AWS SDK's SQS client that entry points load with `import()` (the client; the commands are
 * imported by name where they are sent). A dynamic import of `@aws-sdk/client-sqs` itself would keep every export
 * of the package (all its commands and the aggregated `SQS` class) in the bundle (lib/bundled-function.ts).
 *
 * @internal
 */
export { SQSClient } from '@aws-sdk/client-sqs';
