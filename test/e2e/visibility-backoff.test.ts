import { randomUUID } from 'node:crypto';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { holdCaseLock } from '../../tools/local/hold-case-lock.ts';
import { freePort } from '../../tools/local/local-postgres.ts';
import { sqsClientFor } from '../../tools/local/local-sqs.ts';
import { createTestDatabase } from '../support/database.ts';
import { envelopeFactory, lambdaContext, receivedRecord, sqsEvent } from '../support/sqs-event.ts';
import { exampleWorker } from '../support/test-worker.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

const db = await createTestDatabase();
const fixture = await localQueueFixture();
/** The operator's client: queues, sending, and the receives that stand in for the event source mapping. */
const client = fixture.sqs;

async function createQueue(name: string) {
  const { QueueUrl } = await client.send(
    new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '30' } }),
  );
  const { Attributes } = await client.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  fixture.bindQueue(QueueUrl as string);
  return { url: QueueUrl as string, arn: Attributes?.QueueArn as string, name };
}

async function receiveOne(url: string, waitSeconds = 5): Promise<Message | undefined> {
  const { Messages } = await client.send(
    new ReceiveMessageCommand({
      QueueUrl: url,
      WaitTimeSeconds: waitSeconds,
      MessageSystemAttributeNames: ['All'],
      MaxNumberOfMessages: 1,
    }),
  );
  return Messages?.[0];
}

/** Milliseconds until the in-flight message becomes visible again, read from the emulator. */
function visibleInMs(queueName: string, messageId: string): number {
  const inflight = fixture
    .inspectQueue(queueName)
    ?.messages.inflight.find((entry) => entry.message.messageId === messageId);
  return (inflight?.visibilityDeadline ?? 0) - Date.now();
}

describe('Backoff through ChangeMessageVisibilityBatch (local SQS, real SDK)', () => {
  it('sets a visibility that grows with the receive count while the case row is locked, then completes after release', async () => {
    // Prepare
    const queue = await createQueue(`backoff-${randomUUID().slice(0, 8)}`);
    const caseId = `CASE-${randomUUID()}`;
    await db.sql`insert into cases (case_id, stage, version) values (${caseId}, 'REVIEW', 1)`;
    const envelope = envelopeFactory({
      messageType: 'CaseDeadlineCalculationRequested',
      idempotencyKey: `deadline:${caseId}`,
      payload: { caseId, stage: 'REVIEW', effectiveAt: '2026-07-06T10:15:00Z' },
    });
    await client.send(new SendMessageCommand({ QueueUrl: queue.url, MessageBody: JSON.stringify(envelope) }));
    // random() = 1 takes the top of the jitter range, so the visibility is exactly the cap: 1 s, then 2 s.
    // The role's lock_timeout (5 s, as deployed) lowered to 200 ms for the worker's client.
    const worker = exampleWorker(db.client({ connection: { lock_timeout: 200 } }), {
      sqs: fixture.as('worker').sqs,
      random: () => 0.999999,
      backoff: { baseSeconds: 1, maxSeconds: 8 },
      failInvocationOnFullBatchFailure: false,
    });
    const release = await holdCaseLock(db.client({ max: 1 }), caseId);

    // Act 1: first delivery while locked.
    const first = (await receiveOne(queue.url)) as Message;
    const firstResponse = await worker(sqsEvent([receivedRecord(first, queue.arn)]), lambdaContext());
    const firstVisibleIn = visibleInMs(queue.name, first.MessageId as string);
    const immediately = await receiveOne(queue.url, 0);

    // Act 2: second delivery (receive count 2), still locked.
    const second = (await receiveOne(queue.url, 5)) as Message;
    const secondResponse = await worker(sqsEvent([receivedRecord(second, queue.arn)]), lambdaContext());
    const secondVisibleIn = visibleInMs(queue.name, second.MessageId as string);

    // Act 3: release the lock; the next delivery completes.
    await release();
    const third = (await receiveOne(queue.url, 10)) as Message;
    const thirdResponse = await worker(sqsEvent([receivedRecord(third, queue.arn)]), lambdaContext());

    // Assess
    expect(firstResponse).toEqual({ batchItemFailures: [{ itemIdentifier: first.MessageId }] });
    expect(first.Attributes?.ApproximateReceiveCount).toBe('1');
    expect(firstVisibleIn).toBeGreaterThan(500);
    expect(firstVisibleIn).toBeLessThanOrEqual(1000);
    expect(immediately).toBeUndefined();
    expect(secondResponse).toEqual({ batchItemFailures: [{ itemIdentifier: second.MessageId }] });
    expect(second.Attributes?.ApproximateReceiveCount).toBe('2');
    expect(secondVisibleIn).toBeGreaterThan(1500);
    expect(secondVisibleIn).toBeLessThanOrEqual(2000);
    expect(third.Attributes?.ApproximateReceiveCount).toBe('3');
    expect(thirdResponse).toEqual({ batchItemFailures: [] });
    const [row] =
      await db.sql`select status, receive_count from worker_inbox where idempotency_key = ${`deadline:${caseId}`}`;
    expect(row).toEqual({ status: 'COMPLETED', receive_count: 3 });
  });

  it('keeps the outcome when the visibility call fails', async () => {
    // Prepare: an SQS client whose endpoint refuses connections (a port that was just free: nothing listens).
    const queue = await createQueue(`broken-visibility-${randomUUID().slice(0, 8)}`);
    const envelope = envelopeFactory({ messageType: 'AlwaysMissing', idempotencyKey: `x:${randomUUID()}` });
    await client.send(new SendMessageCommand({ QueueUrl: queue.url, MessageBody: JSON.stringify(envelope) }));
    const message = (await receiveOne(queue.url)) as Message;
    const deadEndpoint = sqsClientFor(`http://127.0.0.1:${await freePort()}`, 'us-east-1', 'worker');
    try {
      const worker = exampleWorker(db.sql, {
        sqs: deadEndpoint,
        terminalPolicy: 'dlq',
        failInvocationOnFullBatchFailure: false,
      });

      // Act
      const response = await worker(sqsEvent([receivedRecord(message, queue.arn)]), lambdaContext());

      // Assess: reported as decided (terminal, policy dlq), and the emulator's visibility was not touched.
      expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: message.MessageId }] });
      expect(visibleInMs(queue.name, message.MessageId as string)).toBeGreaterThan(25_000);
    } finally {
      deadEndpoint.destroy();
    }
  });
});
