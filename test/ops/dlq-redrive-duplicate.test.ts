import type { Message } from '@aws-sdk/client-sqs';
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { sqsEventRecord } from '../../lambda/sqs/sqs-event-record.ts';
import { dlqRedrive } from '../../tools/ops/dlq-redrive.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { postgresOpsStore } from '../../tools/ops/stores/postgres/index.ts';
import { captureOutput } from '../support/capture-output.ts';
import { createTestDatabase } from '../support/database.ts';
import { lambdaContext, sqsEvent } from '../support/sqs-event.ts';
import { exampleWorker } from '../support/test-worker.ts';
import { createQueues, depth, fastClock, paymentEnvelope, sendAll, startOpsSqs } from './ops-fixture.ts';

const db = await createTestDatabase();
const store = postgresOpsStore({ sql: () => db.sql });
const { sqs } = await startOpsSqs();

const receiveOne = async (queueUrl: string): Promise<Message | undefined> => {
  const response = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 1,
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    }),
  );
  return response.Messages?.[0];
};

describe('Command: dlq redrive with the worker', () => {
  it('makes a redriven message that had already completed a duplicate no-op', async () => {
    // Prepare: the worker commits a payment but its delete is lost (crash between commit and delete); the
    // copy is received again until the RedrivePolicy moves it to the DLQ.
    const { queueUrl, queueArn, dlqUrl } = await createQueues(sqs, { maxReceiveCount: 2 });
    const envelope = paymentEnvelope(1);
    const paymentId = (envelope.payload as { paymentId: string }).paymentId;
    await sendAll(sqs, queueUrl, [envelope]);
    const worker = exampleWorker(db.sql);
    const first = (await receiveOne(queueUrl)) as Message;
    const firstRun = await captureOutput(() =>
      worker(
        sqsEvent([sqsEventRecord(first, { eventSourceArn: queueArn, awsRegion: 'us-east-1' })]),
        lambdaContext(),
      ),
    );
    expect(firstRun.result).toEqual({ batchItemFailures: [] });
    const [completed] = await db.sql`
      select status, completed_at, receive_count from worker_inbox where idempotency_key = ${envelope.idempotencyKey}
    `;
    expect(completed?.status).toBe('COMPLETED');
    await sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: queueUrl,
        ReceiptHandle: first.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    const second = (await receiveOne(queueUrl)) as Message;
    await sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: queueUrl,
        ReceiptHandle: second.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    expect(await receiveOne(queueUrl)).toBeUndefined(); // third receive: moved to the DLQ
    expect(await depth(sqs, dlqUrl)).toEqual({ visible: 1, inFlight: 0 });

    // Act: redrive it, and let the worker process the redriven copy.
    const redrive = await dlqRedrive(
      { store, sqs, out: createMemoryOutput(), clock: fastClock() },
      { dlqUrl, queueUrl, consumer: 'case-worker', max: 1, waitSeconds: 0 },
    );
    const redriven = (await receiveOne(queueUrl)) as Message;
    const secondRun = await captureOutput(() =>
      worker(
        sqsEvent([sqsEventRecord(redriven, { eventSourceArn: queueArn, awsRegion: 'us-east-1' })]),
        lambdaContext(),
      ),
    );
    await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: redriven.ReceiptHandle }));

    // Assess
    expect(redrive.moves).toEqual([
      expect.objectContaining({ code: 'COMPLETED', idempotencyKey: envelope.idempotencyKey }),
    ]);
    expect(redriven.Body).toBe(JSON.stringify(envelope));
    expect(secondRun.result).toEqual({ batchItemFailures: [] });
    const [after] = await db.sql`
      select status, completed_at, receive_count from worker_inbox where idempotency_key = ${envelope.idempotencyKey}
    `;
    expect(after?.status).toBe('COMPLETED');
    expect(after?.completed_at).toEqual(completed?.completed_at); // not applied again
    expect(after?.receive_count).toBe((completed?.receive_count as number) + 1); // seen as a duplicate
    const [ledger] =
      await db.sql`select count(*)::int as n from ledger_entries where source_event_id = ${paymentId}`;
    expect(ledger?.n).toBe(1);
    expect(await depth(sqs, dlqUrl)).toEqual({ visible: 0, inFlight: 0 });
  });
});
