import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { describeRefusal } from '../../tools/local/iam/local-iam.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

const fixture = await localQueueFixture();

describe('localQueueFixture(): fauxqs behind the local IAM layer', () => {
  it('runs each component with its role: the worker may receive from its queue but not send to it, and the refusal names its role', async () => {
    // Prepare
    const { queueUrl } = await fixture.queues();
    await fixture.send(queueUrl, ['from the operator']);
    const worker = fixture.as('worker');

    // Act
    const received = await worker.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 0 }),
    );
    const sent = await worker.sqs
      .send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'from the worker' }))
      .then(
        () => 'sent',
        (error: Error) => error.name,
      );

    // Assess
    expect(received.Messages?.map((message) => message.Body)).toEqual(['from the operator']);
    expect(sent).toBe('AccessDenied');
    expect(fixture.takeRefusals().map(describeRefusal)).toEqual([
      expect.stringMatching(
        /^IAM: worker \(role Worker\/WorkerFunction\/ServiceRole, stage dev\) was refused sqs:SendMessage on arn:aws:sqs:us-east-1:000000000000:q-[0-9a-f]{8} \(no identity-based policy allows it\)$/,
      ),
    ]);
  });

  it('lets the worker read the objects of its bucket and refuses it a write; the operator may do both', async () => {
    // Prepare
    const bucket = await fixture.bucket();
    await fixture.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'a.txt', Body: 'a' }));
    const worker = fixture.as('worker');

    // Act
    const read = await worker.s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'a.txt' }));
    const written = await worker.s3
      .send(new PutObjectCommand({ Bucket: bucket, Key: 'b.txt', Body: 'b' }))
      .then(
        () => 'written',
        (error: Error) => error.name,
      );

    // Assess
    expect(await read.Body?.transformToString()).toBe('a');
    expect(written).toBe('AccessDenied');
    expect(fixture.takeRefusals().map((refusal) => `${refusal.component} ${refusal.action}`)).toEqual([
      'worker s3:PutObject',
    ]);
  });
});
