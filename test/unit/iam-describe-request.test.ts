import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import {
  ChangeMessageVisibilityBatchCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ListQueuesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import {
  BatchWriteCommand,
  DynamoDBDocumentClient,
  PutCommand,
  QueryCommand,
  TransactGetCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { type DescribedRequest, describeRequest } from '../../tools/local/iam/describe-request.ts';
import { localCredentials } from '../../tools/local/iam/local-identities.ts';
import { awsWire } from '../support/aws-wire.ts';

// The requests are the real SDK's, captured on the wire: the mapping is tested against what the clients send.
const wire = await awsWire();
const common = {
  endpoint: wire.endpoint,
  region: 'eu-west-1',
  credentials: localCredentials('worker'),
  maxAttempts: 1,
};
const sqs = new SQSClient({ ...common, useQueueUrlAsEndpoint: false });
const s3 = new S3Client({ ...common, forcePathStyle: true });
const dynamo = DynamoDBDocumentClient.from(new DynamoDBClient(common));
const QUEUE_URL = 'http://sqs.eu-west-1.127.0.0.1:4566/000000000000/orders';
const QUEUE_ARN = 'arn:aws:sqs:eu-west-1:000000000000:orders';
const TABLE_ARN = (table: string) => `arn:aws:dynamodb:eu-west-1:000000000000:table/${table}`;

/** Sends `command` (which fails: the wire answers 500) and describes the request it put on the wire. */
async function described(client: { send(command: never): Promise<unknown> }, command: unknown) {
  const before = wire.requests.length;
  await client.send(command as never).catch(() => {});
  const request = wire.requests[before];
  if (!request) throw new Error('the SDK sent nothing');
  return describeRequest(request, {
    region: 'us-east-1',
    partitionKeyOf: (table) => (table === 'work' ? 'PK' : undefined),
  });
}

const calls = (request: DescribedRequest) =>
  request.calls.map(({ action, resource }) => `${action} ${resource}`);

describe('Function: describeRequest() — SQS (JSON protocol)', () => {
  it('names the signer, the service and the region from the SigV4 credential scope', async () => {
    // Act
    const request = await described(sqs, new ReceiveMessageCommand({ QueueUrl: QUEUE_URL }));

    // Assess
    expect(request).toMatchObject({
      service: 'sqs',
      accessKeyId: 'LOCALWORKER000000000',
      region: 'eu-west-1',
      operation: 'ReceiveMessage',
    });
    expect(calls(request)).toEqual([`sqs:ReceiveMessage ${QUEUE_ARN}`]);
  });

  it.each([
    [
      'SendMessageBatch',
      new SendMessageBatchCommand({ QueueUrl: QUEUE_URL, Entries: [{ Id: '1', MessageBody: 'x' }] }),
      'sqs:SendMessage',
    ],
    [
      'DeleteMessageBatch',
      new DeleteMessageBatchCommand({ QueueUrl: QUEUE_URL, Entries: [{ Id: '1', ReceiptHandle: 'h' }] }),
      'sqs:DeleteMessage',
    ],
    [
      'ChangeMessageVisibilityBatch',
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: QUEUE_URL,
        Entries: [{ Id: '1', ReceiptHandle: 'h', VisibilityTimeout: 5 }],
      }),
      'sqs:ChangeMessageVisibility',
    ],
    ['GetQueueAttributes', new GetQueueAttributesCommand({ QueueUrl: QUEUE_URL }), 'sqs:GetQueueAttributes'],
  ])('authorizes %s as %s on the queue of its QueueUrl', async (operation, command, action) => {
    // Act
    const request = await described(sqs, command);

    // Assess
    expect(request.operation).toBe(operation);
    expect(calls(request)).toEqual([`${action} ${QUEUE_ARN}`]);
  });

  it('takes the queue of CreateQueue from QueueName, and ListQueues on no resource', async () => {
    // Act
    const create = await described(sqs, new CreateQueueCommand({ QueueName: 'orders' }));
    const list = await described(sqs, new ListQueuesCommand({}));

    // Assess
    expect(calls(create)).toEqual([`sqs:CreateQueue ${QUEUE_ARN}`]);
    expect(calls(list)).toEqual(['sqs:ListQueues *']);
  });

  it('reads the query protocol too (a form body with Action=)', () => {
    // Prepare
    const body = Buffer.from(
      `Action=DeleteMessage&QueueUrl=${encodeURIComponent(QUEUE_URL)}&ReceiptHandle=h`,
    );

    // Act
    const request = describeRequest(
      {
        method: 'POST',
        url: '/',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization:
            'AWS4-HMAC-SHA256 Credential=LOCALRELAY0000000000/20260101/eu-west-1/sqs/aws4_request, Signature=x',
        },
        body,
      },
      { region: 'us-east-1' },
    );

    // Assess
    expect(request).toMatchObject({ accessKeyId: 'LOCALRELAY0000000000', operation: 'DeleteMessage' });
    expect(calls(request)).toEqual([`sqs:DeleteMessage ${QUEUE_ARN}`]);
  });
});

describe('Function: describeRequest() — S3 (REST, path-style)', () => {
  it.each([
    [
      'GetObject',
      new GetObjectCommand({ Bucket: 'payloads', Key: 'a/b c.pdf' }),
      ['s3:GetObject arn:aws:s3:::payloads/a/b c.pdf'],
    ],
    [
      'GetObject with a VersionId',
      new GetObjectCommand({ Bucket: 'payloads', Key: 'k', VersionId: 'v1' }),
      ['s3:GetObjectVersion arn:aws:s3:::payloads/k'],
    ],
    [
      'HeadObject',
      new HeadObjectCommand({ Bucket: 'payloads', Key: 'k' }),
      ['s3:GetObject arn:aws:s3:::payloads/k'],
    ],
    [
      'PutObject',
      new PutObjectCommand({ Bucket: 'payloads', Key: 'k', Body: 'x' }),
      ['s3:PutObject arn:aws:s3:::payloads/k'],
    ],
    [
      'CopyObject (reads its source, writes its target)',
      new CopyObjectCommand({ Bucket: 'payloads', Key: 'to', CopySource: 'other/from' }),
      ['s3:GetObject arn:aws:s3:::other/from', 's3:PutObject arn:aws:s3:::payloads/to'],
    ],
    [
      'ListObjectsV2',
      new ListObjectsV2Command({ Bucket: 'payloads' }),
      ['s3:ListBucket arn:aws:s3:::payloads'],
    ],
    [
      'CreateBucket',
      new CreateBucketCommand({ Bucket: 'payloads' }),
      ['s3:CreateBucket arn:aws:s3:::payloads'],
    ],
    ['ListBuckets', new ListBucketsCommand({}), ['s3:ListAllMyBuckets *']],
    [
      'DeleteObjects (each key it lists)',
      new DeleteObjectsCommand({
        Bucket: 'payloads',
        Delete: { Objects: [{ Key: 'a' }, { Key: 'b&c', VersionId: 'v2' }] },
      }),
      ['s3:DeleteObject arn:aws:s3:::payloads/a', 's3:DeleteObjectVersion arn:aws:s3:::payloads/b&c'],
    ],
  ])('authorizes %s', async (_, command, expected) => {
    // Act
    const request = await described(s3, command);

    // Assess
    expect(request.service).toBe('s3');
    expect(calls(request)).toEqual(expected);
  });
});

describe('Function: describeRequest() — DynamoDB', () => {
  it('authorizes PutItem on the table with the item partition key as dynamodb:LeadingKeys', async () => {
    // Act
    const request = await described(
      dynamo,
      new PutCommand({ TableName: 'work', Item: { PK: 'IDEMP#1', SK: 'W' } }),
    );

    // Assess
    expect(request.calls).toEqual([
      {
        action: 'dynamodb:PutItem',
        resource: TABLE_ARN('work'),
        context: { 'dynamodb:LeadingKeys': ['IDEMP#1'] },
      },
    ]);
  });

  it("takes a Query's leading key from its key condition, and names an index's ARN", async () => {
    // Act
    const request = await described(
      dynamo,
      new QueryCommand({
        TableName: 'work',
        IndexName: 'byStatus',
        KeyConditionExpression: '#pk = :pk AND begins_with(SK, :sk)',
        ExpressionAttributeNames: { '#pk': 'PK' },
        ExpressionAttributeValues: { ':pk': 'CASE#7', ':sk': 'D' },
      }),
    );

    // Assess
    expect(request.calls).toEqual([
      {
        action: 'dynamodb:Query',
        resource: `${TABLE_ARN('work')}/index/byStatus`,
        context: { 'dynamodb:LeadingKeys': ['CASE#7'] },
      },
    ]);
  });

  it('authorizes TransactWriteItems item by item as PutItem, UpdateItem, DeleteItem and ConditionCheckItem', async () => {
    // Act
    const request = await described(
      dynamo,
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: 'work', Item: { PK: 'A', SK: '1' } } },
          {
            Update: {
              TableName: 'work',
              Key: { PK: 'B', SK: '1' },
              UpdateExpression: 'SET v = :v',
              ExpressionAttributeValues: { ':v': 1 },
            },
          },
          { Delete: { TableName: 'other', Key: { PK: 'C', SK: '1' } } },
          {
            ConditionCheck: {
              TableName: 'work',
              Key: { PK: 'D', SK: '1' },
              ConditionExpression: 'attribute_exists(PK)',
            },
          },
        ],
      }),
    );

    // Assess: one authorization per item and table; `other` has no known key attribute, so no LeadingKeys
    expect(request.operation).toBe('TransactWriteItems');
    expect(request.calls).toEqual([
      { action: 'dynamodb:PutItem', resource: TABLE_ARN('work'), context: { 'dynamodb:LeadingKeys': ['A'] } },
      {
        action: 'dynamodb:UpdateItem',
        resource: TABLE_ARN('work'),
        context: { 'dynamodb:LeadingKeys': ['B'] },
      },
      { action: 'dynamodb:DeleteItem', resource: TABLE_ARN('other') },
      {
        action: 'dynamodb:ConditionCheckItem',
        resource: TABLE_ARN('work'),
        context: { 'dynamodb:LeadingKeys': ['D'] },
      },
    ]);
  });

  it('authorizes TransactGetItems as GetItem per item, and BatchWriteItem once per table with every key', async () => {
    // Act
    const get = await described(
      dynamo,
      new TransactGetCommand({ TransactItems: [{ Get: { TableName: 'work', Key: { PK: 'A', SK: '1' } } }] }),
    );
    const batch = await described(
      dynamo,
      new BatchWriteCommand({
        RequestItems: {
          work: [
            { PutRequest: { Item: { PK: 'A', SK: '1' } } },
            { DeleteRequest: { Key: { PK: 'B', SK: '1' } } },
          ],
          other: [{ PutRequest: { Item: { PK: 'C', SK: '1' } } }],
        },
      }),
    );

    // Assess
    expect(get.calls).toEqual([
      { action: 'dynamodb:GetItem', resource: TABLE_ARN('work'), context: { 'dynamodb:LeadingKeys': ['A'] } },
    ]);
    expect(batch.calls).toEqual([
      {
        action: 'dynamodb:BatchWriteItem',
        resource: TABLE_ARN('work'),
        context: { 'dynamodb:LeadingKeys': ['A', 'B'] },
      },
      { action: 'dynamodb:BatchWriteItem', resource: TABLE_ARN('other') },
    ]);
  });
});
