import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';

/**
 * The versioned payload bucket and its access-log bucket. Objects are content-addressed and never rewritten in
 * place; a message names the version it was sent with, and the lifecycle keeps every version at least as long as
 * the queue and the DLQ can hold a message that refers to it (`payloadVersionRetention`).
 *
 * @internal
 */
export function createPayloadBucket(scope: Construct, retention: Duration, production: boolean): s3.Bucket {
  const removalPolicy = production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
  const accessLogs = new s3.Bucket(scope, 'PayloadAccessLogBucket', {
    encryption: s3.BucketEncryption.S3_MANAGED,
    enforceSSL: true,
    blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
    removalPolicy,
    lifecycleRules: [{ id: 'expire-access-logs', expiration: Duration.days(365) }],
  });
  Validations.of(accessLogs).acknowledge({
    id: 'AwsSolutions-S1',
    reason: 'This is the access-log bucket of the payload bucket; logging it into itself would loop.',
  });
  return new s3.Bucket(scope, 'PayloadBucket', {
    versioned: true,
    encryption: s3.BucketEncryption.S3_MANAGED,
    enforceSSL: true,
    blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
    objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
    serverAccessLogsBucket: accessLogs,
    serverAccessLogsPrefix: 'payload-bucket/',
    removalPolicy,
    lifecycleRules: [
      {
        id: 'expire-payload-versions',
        expiration: retention,
        noncurrentVersionExpiration: retention,
        abortIncompleteMultipartUploadAfter: Duration.days(1),
      },
      { id: 'remove-expired-delete-markers', expiredObjectDeleteMarker: true },
    ],
  });
}

/**
 * Lets a reader of `payloadRef` objects (the worker function's role, the poller's task role) read the payload
 * bucket's objects and their versions, and list the bucket. ListBucket is there for one answer: S3 tells a caller
 * that an object does not exist (404 `NoSuchKey`, terminal `PAYLOAD_NOT_FOUND`, quarantined) only when it may list
 * the bucket; without it the answer is 403 `AccessDenied` (`PAYLOAD_ACCESS_DENIED`, retried until the DLQ). The
 * keys it can list are content hashes; no write, no delete, no other bucket. `what` names the reader for cdk-nag.
 *
 * @internal
 */
export function grantPayloadRead(bucket: s3.IBucket, role: iam.IRole | undefined, what: string): void {
  if (!role) return;
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'ReadPayloadObjects',
      actions: ['s3:GetObject', 's3:GetObjectVersion'],
      resources: [bucket.arnForObjects('*')],
    }),
  );
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'KnowMissingPayloads',
      actions: ['s3:ListBucket'],
      resources: [bucket.bucketArn],
    }),
  );
  // cdk-nag IAM5: a grant on every object of the bucket (keys are content hashes, unknown up front).
  const bucketId = Stack.of(bucket).getLogicalId(bucket.node.defaultChild as s3.CfnBucket);
  Validations.of(role).acknowledge({
    id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/*]`,
    reason: `Payload objects are named by their SHA-256, unknown at deploy time: ${what} of that one bucket (GetObject/GetObjectVersion only).`,
  });
}
