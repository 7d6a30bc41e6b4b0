import { describe, expect, it } from 'vitest';
import { SqsCallCounter } from '../../tools/bench/sqs-call-counter.ts';
import { sqsCallKinds } from '../../tools/bench/sqs-call-kinds.ts';

/** One HTTP/1.1 request as the AWS SDK sends an SQS call (JSON protocol). */
function request(action: string, body: string): string {
  return [
    'POST / HTTP/1.1',
    'host: 127.0.0.1:4566',
    'content-type: application/x-amz-json-1.0',
    `X-Amz-Target: AmazonSQS.${action}`,
    `content-length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
}

describe('Class: SqsCallCounter', () => {
  it('counts each request by its X-Amz-Target action, however the bytes are split', () => {
    // Prepare
    const wire = Buffer.from(
      request('ReceiveMessage', '{"QueueUrl":"q","MaxNumberOfMessages":10}') +
        request('DeleteMessageBatch', '{"Entries":[]}') +
        request('ReceiveMessage', '{}'),
    );
    const whole = new SqsCallCounter();
    const byteByByte = new SqsCallCounter();

    // Act
    whole.feed(wire);
    for (let at = 0; at < wire.length; at += 1) byteByByte.feed(wire.subarray(at, at + 1));

    // Assess
    const expected = { ReceiveMessage: 2, DeleteMessageBatch: 1 };
    expect(Object.fromEntries(whole.calls)).toEqual(expected);
    expect(Object.fromEntries(byteByByte.calls)).toEqual(expected);
  });

  it('skips a body by its length, so a header-like text inside it is not a call', () => {
    const counter = new SqsCallCounter();
    const body =
      '{"MessageBody":"\\r\\n\\r\\nPOST / HTTP/1.1\\r\\nX-Amz-Target: AmazonSQS.PurgeQueue\\r\\n\\r\\n"}';

    counter.feed(Buffer.from(request('SendMessage', body) + request('ChangeMessageVisibilityBatch', '{}')));

    expect(Object.fromEntries(counter.calls)).toEqual({ SendMessage: 1, ChangeMessageVisibilityBatch: 1 });
  });

  it('counts a request without a target as unknown', () => {
    const counter = new SqsCallCounter();

    counter.feed(Buffer.from('GET /health HTTP/1.1\r\nhost: x\r\n\r\n'));

    expect(Object.fromEntries(counter.calls)).toEqual({ unknown: 1 });
  });
});

describe('Function: sqsCallKinds()', () => {
  it('groups single and batch forms by kind, per message', () => {
    const kinds = sqsCallKinds(
      {
        ReceiveMessage: 10,
        DeleteMessage: 5,
        DeleteMessageBatch: 5,
        ChangeMessageVisibility: 2,
        ChangeMessageVisibilityBatch: 2,
        GetQueueAttributes: 1,
      },
      100,
    );

    expect(kinds).toEqual({ receive: 0.1, delete: 0.1, visibility: 0.04, other: 0.01, total: 0.25 });
  });
});
