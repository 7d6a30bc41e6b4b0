import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import {
  type AwsErrorResponse,
  accessDeniedMessage,
  accessDeniedResponse,
  unknownKeyResponse,
} from '../../tools/local/iam/aws-refusal.ts';
import { localCredentials } from '../../tools/local/iam/local-identities.ts';
import { awsWire } from '../support/aws-wire.ts';

// The wire answers every request with the response the test sets: the real SDK clients parse it.
let next: AwsErrorResponse = { status: 500, headers: {}, body: '' };
const wire = await awsWire((_, response) => {
  response.writeHead(next.status, {
    ...next.headers,
    'content-length': String(Buffer.byteLength(next.body)),
  });
  response.end(next.body);
});
const common = {
  endpoint: wire.endpoint,
  region: 'us-east-1',
  credentials: localCredentials('poller'),
  maxAttempts: 1,
};
const SESSION =
  'arn:aws:sts::000000000000:assumed-role/SqsInboxWorker-fargate-WorkerPollerTaskRole50521149/poller';

/** What the SDK threw for `command`. */
async function thrown(client: { send(command: never): Promise<unknown> }, command: unknown) {
  const error = await client.send(command as never).then(
    () => undefined,
    (caught: unknown) => caught as Error & { $metadata?: { httpStatusCode?: number } },
  );
  if (!error) throw new Error('the call succeeded');
  return error;
}

describe('Function: accessDeniedMessage()', () => {
  it("words a refusal as AWS does: the session, the action, the resource and why (S3's resource quoted)", () => {
    // Act
    const implicit = accessDeniedMessage('sqs', {
      sessionArn: SESSION,
      action: 'sqs:GetQueueAttributes',
      resource: 'arn:aws:sqs:us-east-1:000000000000:q',
      reason: 'no-identity-allow',
    });
    const explicit = accessDeniedMessage('s3', {
      sessionArn: SESSION,
      action: 's3:GetObject',
      resource: 'arn:aws:s3:::b/k',
      reason: 'resource-deny',
    });

    // Assess
    expect(implicit).toBe(
      `User: ${SESSION} is not authorized to perform: sqs:GetQueueAttributes on resource: arn:aws:sqs:us-east-1:000000000000:q because no identity-based policy allows the sqs:GetQueueAttributes action`,
    );
    expect(explicit).toBe(
      `User: ${SESSION} is not authorized to perform: s3:GetObject on resource: "arn:aws:s3:::b/k" with an explicit deny in a resource-based policy`,
    );
  });
});

describe('Function: accessDeniedResponse() — parsed by the real AWS SDK', () => {
  it('SQS (JSON protocol): HTTP 400, the SDK names it AccessDenied (x-amzn-query-error) with the message', async () => {
    // Prepare
    next = accessDeniedResponse(
      'sqs',
      'POST',
      'User: x is not authorized to perform: sqs:GetQueueAttributes',
    );

    // Act
    const error = await thrown(
      new SQSClient({ ...common, useQueueUrlAsEndpoint: false }),
      new GetQueueAttributesCommand({ QueueUrl: 'http://q/000000000000/q' }),
    );

    // Assess
    expect(next.status).toBe(400);
    expect(next.headers['x-amzn-query-error']).toBe('AccessDenied;Sender');
    expect(JSON.parse(next.body).__type).toBe('com.amazon.coral.service#AccessDeniedException');
    expect(error.name).toBe('AccessDenied');
    expect(error.message).toBe('User: x is not authorized to perform: sqs:GetQueueAttributes');
    expect(error.$metadata?.httpStatusCode).toBe(400);
  });

  it('S3: HTTP 403 <Error><Code>AccessDenied</Code>, which the SDK names AccessDenied', async () => {
    // Prepare
    next = accessDeniedResponse(
      's3',
      'GET',
      'User: x is not authorized to perform: s3:GetObject on resource: "b/<k>"',
    );

    // Act
    const error = await thrown(
      new S3Client({ ...common, forcePathStyle: true }),
      new GetObjectCommand({ Bucket: 'b', Key: 'k' }),
    );

    // Assess
    expect(error.name).toBe('AccessDenied');
    expect(error.message).toBe('User: x is not authorized to perform: s3:GetObject on resource: "b/<k>"');
    expect(error.$metadata?.httpStatusCode).toBe(403);
  });

  it('S3 HEAD: HTTP 403 without a body, as S3 answers a HEAD', async () => {
    // Prepare
    next = accessDeniedResponse('s3', 'HEAD', 'denied');

    // Act
    const error = await thrown(
      new S3Client({ ...common, forcePathStyle: true }),
      new HeadObjectCommand({ Bucket: 'b', Key: 'k' }),
    );

    // Assess
    expect(next.body).toBe('');
    expect(error.$metadata?.httpStatusCode).toBe(403);
  });

  it('DynamoDB: HTTP 400, the SDK names it AccessDeniedException with the message', async () => {
    // Prepare
    next = accessDeniedResponse('dynamodb', 'POST', 'User: x is not authorized to perform: dynamodb:GetItem');

    // Act
    const error = await thrown(
      new DynamoDBClient(common),
      new GetItemCommand({ TableName: 't', Key: { PK: { S: 'a' } } }),
    );

    // Assess
    expect(error.name).toBe('AccessDeniedException');
    expect(error.message).toBe('User: x is not authorized to perform: dynamodb:GetItem');
    expect(error.$metadata?.httpStatusCode).toBe(400);
  });
});

describe('Function: unknownKeyResponse() — parsed by the real AWS SDK', () => {
  it.each([
    ['sqs', 'InvalidClientTokenId'],
    ['s3', 'InvalidAccessKeyId'],
    ['dynamodb', 'UnrecognizedClientException'],
  ])('%s: an unknown key is refused as AWS refuses one (%s)', async (service, name) => {
    // Prepare
    next = unknownKeyResponse(service, 'POST', 'AKIAUNKNOWN');
    const clients = {
      sqs: () =>
        thrown(
          new SQSClient({ ...common, useQueueUrlAsEndpoint: false }),
          new GetQueueAttributesCommand({ QueueUrl: 'http://q/000000000000/q' }),
        ),
      s3: () =>
        thrown(
          new S3Client({ ...common, forcePathStyle: true }),
          new GetObjectCommand({ Bucket: 'b', Key: 'k' }),
        ),
      dynamodb: () =>
        thrown(new DynamoDBClient(common), new GetItemCommand({ TableName: 't', Key: { PK: { S: 'a' } } })),
    };

    // Act
    const error = await clients[service as keyof typeof clients]();

    // Assess
    expect(error.name).toBe(name);
  });
});
