import type { SQSClient } from '@aws-sdk/client-sqs';
import { DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { dlqRedrive } from '../../tools/ops/dlq-redrive.ts';
import { OperationError } from '../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { postgresOpsStore } from '../../tools/ops/stores/postgres/index.ts';
import { createTestDatabase } from '../support/database.ts';
import {
  createQueues,
  depth,
  fastClock,
  paymentEnvelope,
  seedInbox,
  sendAll,
  startOpsSqs,
} from './ops-fixture.ts';

const db = await createTestDatabase();
const store = postgresOpsStore({ sql: () => db.sql });
const { sqs } = await startOpsSqs();

describe('Function: dlqRedrive()', () => {
  it('moves exactly --max 3 of 10 DLQ messages and leaves 7, each audited', async () => {
    // Prepare
    const { queueUrl, dlqUrl } = await createQueues(sqs);
    const envelopes = Array.from({ length: 10 }, (_, i) => paymentEnvelope(i));
    await sendAll(sqs, dlqUrl, envelopes, { tenant: { DataType: 'String', StringValue: 'acme' } });
    const out = createMemoryOutput({ json: true });
    const clock = fastClock();

    // Act
    const result = await dlqRedrive(
      { store, sqs, out, clock },
      { dlqUrl, queueUrl, consumer: 'case-worker', max: 3, ratePerSecond: 5, waitSeconds: 0 },
    );

    // Assess
    expect(result.moved).toBe(3);
    expect(await depth(sqs, dlqUrl)).toEqual({ visible: 7, inFlight: 0 });
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 3, inFlight: 0 });
    const moved = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        MessageAttributeNames: ['All'],
      }),
    );
    const bodies = new Set(envelopes.map((e) => JSON.stringify(e)));
    expect(moved.Messages).toHaveLength(3);
    for (const message of moved.Messages ?? []) {
      expect(bodies.has(message.Body as string)).toBe(true);
      expect(message.MessageAttributes?.tenant?.StringValue).toBe('acme');
    }
    const audit = await db.sql`
      select outcome, sqs_message_id, new_message_id, source_queue, target_queue from ops_audit
      where action = 'dlq_redrive' and source_queue = ${dlqUrl}
    `;
    expect(audit).toHaveLength(3);
    expect(
      audit.every((row) => row.outcome === 'DONE' && row.new_message_id && row.target_queue === queueUrl),
    ).toBe(true);
    expect(new Set((moved.Messages ?? []).map((m) => m.MessageId))).toEqual(
      new Set(audit.map((row) => row.new_message_id)),
    );
    // Rate: 3 sends at 5/s wait 200 ms before the second and the third.
    expect(clock.slept).toEqual([200, 200]);
    expect(out.lastJson<{ moved: number }>().moved).toBe(3);
    expect(out.progressLog).toEqual([{ label: 'redrive', total: 3, value: 3, stopped: true }]);
  });

  it('moves only messages matching --filter and makes the others visible again', async () => {
    // Prepare
    const { queueUrl, dlqUrl } = await createQueues(sqs);
    const failing = [0, 1, 2].map((i) => paymentEnvelope(100 + i));
    const other = [0, 1].map((i) => paymentEnvelope(200 + i));
    for (const envelope of failing)
      await seedInbox(db.sql, envelope, { status: 'FAILED_TERMINAL', failureCode: 'ACCOUNT_CLOSED' });
    for (const envelope of other)
      await seedInbox(db.sql, envelope, { status: 'FAILED_RETRYABLE', failureCode: 'DB_TIMEOUT' });
    await sendAll(sqs, dlqUrl, [...failing, ...other]);

    // Act
    const result = await dlqRedrive(
      { store, sqs, out: createMemoryOutput(), clock: fastClock() },
      {
        dlqUrl,
        queueUrl,
        consumer: 'case-worker',
        max: 10,
        filter: { code: 'ACCOUNT_CLOSED' },
        waitSeconds: 0,
      },
    );

    // Assess
    expect(result.moved).toBe(3);
    expect(result.moves.every((m) => m.code === 'ACCOUNT_CLOSED')).toBe(true);
    expect(result.leftInDlq).toBe(2);
    expect(await depth(sqs, dlqUrl)).toEqual({ visible: 2, inFlight: 0 });
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 3, inFlight: 0 });
    // The moved keys are re-armed: the fixed worker processes them instead of repeating the terminal outcome.
    const rows = await db.sql`
      select status, receive_count from worker_inbox where idempotency_key in ${db.sql(failing.map((e) => e.idempotencyKey))}
    `;
    expect(rows.map((row) => [row.status, row.receive_count])).toEqual([
      ['FAILED_RETRYABLE', 0],
      ['FAILED_RETRYABLE', 0],
      ['FAILED_RETRYABLE', 0],
    ]);
  });

  it('sends and deletes nothing on --dry-run', async () => {
    // Prepare
    const { queueUrl, dlqUrl } = await createQueues(sqs);
    await sendAll(
      sqs,
      dlqUrl,
      [0, 1, 2, 3].map((i) => paymentEnvelope(300 + i)),
    );
    const out = createMemoryOutput();

    // Act
    const result = await dlqRedrive(
      { store, sqs, out, clock: fastClock() },
      { dlqUrl, queueUrl, consumer: 'case-worker', max: 2, dryRun: true, waitSeconds: 0 },
    );

    // Assess
    expect(result).toMatchObject({ dryRun: true, moved: 2 });
    expect(await depth(sqs, dlqUrl)).toEqual({ visible: 4, inFlight: 0 });
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 0, inFlight: 0 });
    const [audit] = await db.sql`select count(*)::int as n from ops_audit where source_queue = ${dlqUrl}`;
    expect(audit?.n).toBe(0);
    expect(out.stdout()).toContain('Dry run: 2 message(s) would move');
    expect(out.stdout()).not.toContain('ACC-1');
  });

  it('keeps a message in the DLQ and its inbox row unchanged when the send fails, and records the failure', async () => {
    // Prepare: a client whose SendMessage fails; every other call goes to fauxqs.
    const { queueUrl, dlqUrl } = await createQueues(sqs);
    const [envelope] = [paymentEnvelope(400)];
    await seedInbox(db.sql, envelope, {
      status: 'FAILED_TERMINAL',
      failureCode: 'ACCOUNT_CLOSED',
      attempts: 4,
    });
    await sendAll(sqs, dlqUrl, [envelope]);
    const inboxRow = () => db.sql`
      select status, receive_count, failure_code from worker_inbox
      where consumer = 'case-worker' and idempotency_key = ${envelope.idempotencyKey}
    `;
    const before = await inboxRow();
    const failingSend = {
      send: (command: { constructor: { name: string } }) => {
        if (command.constructor.name === 'SendMessageCommand')
          return Promise.reject(new Error('AccessDenied'));
        return sqs.send(command as never);
      },
    } as unknown as SQSClient;

    // Act
    const error = await dlqRedrive(
      { store, sqs: failingSend, out: createMemoryOutput(), clock: fastClock() },
      { dlqUrl, queueUrl, consumer: 'case-worker', max: 5, waitSeconds: 0 },
    ).catch((caught: unknown) => caught);

    // Assess
    expect(error).toBeInstanceOf(OperationError);
    expect((error as OperationError).exitCode).toBe(1);
    expect(before).toEqual([{ status: 'FAILED_TERMINAL', receive_count: 4, failure_code: 'ACCOUNT_CLOSED' }]);
    expect(await inboxRow()).toEqual(before);
    expect((error as Error).message).toContain('It stays in the DLQ and its inbox row is unchanged');
    expect(await depth(sqs, dlqUrl)).toEqual({ visible: 1, inFlight: 0 });
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 0, inFlight: 0 });
    const audit = await db.sql`select outcome, detail from ops_audit where source_queue = ${dlqUrl}`;
    expect(audit).toEqual([
      { outcome: 'FAILED', detail: expect.objectContaining({ error: 'send: Error', rearmed: false }) },
    ]);
  });

  it('re-sends a FIFO message that reached the DLQ within the deduplication window, with a fresh deduplication id', async () => {
    // Prepare: the message fails once and SQS moves it to the DLQ (maxReceiveCount 1) seconds after it was
    // sent, keeping its MessageDeduplicationId; the source queue still remembers that id for 5 minutes.
    const { queueUrl, dlqUrl } = await createQueues(sqs, { fifo: true, maxReceiveCount: 1 });
    await sendAll(sqs, queueUrl, [paymentEnvelope(500)], undefined, { groupId: 'case-C-1' });
    const failed = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        VisibilityTimeout: 0,
        MessageSystemAttributeNames: ['All'],
      }),
    );
    const original = failed.Messages?.[0]?.Attributes?.MessageDeduplicationId;
    const movedToDlq = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl }));
    expect(original).toMatch(/^dedup-0-\d+$/);
    expect(movedToDlq.Messages ?? []).toHaveLength(0);
    expect(await depth(sqs, dlqUrl)).toEqual({ visible: 1, inFlight: 0 });

    // Act
    const result = await dlqRedrive(
      { store, sqs, out: createMemoryOutput(), clock: fastClock() },
      { dlqUrl, queueUrl, consumer: 'case-worker', max: 1, waitSeconds: 0 },
    );

    // Assess: the copy is on the source queue, not silently dropped as a duplicate of the original send.
    expect(result.moved).toBe(1);
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 1, inFlight: 0 });
    expect(await depth(sqs, dlqUrl)).toEqual({ visible: 0, inFlight: 0 });
    const received = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MessageSystemAttributeNames: ['All'],
        MaxNumberOfMessages: 1,
      }),
    );
    const [message] = received.Messages ?? [];
    expect(message?.MessageId).toBe(result.moves[0]?.newMessageId);
    expect(message?.Attributes?.MessageGroupId).toBe('case-C-1');
    expect(message?.Attributes?.MessageDeduplicationId).toBe(
      `${original}-redrive-${result.moves[0]?.auditId}`,
    );
    await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message?.ReceiptHandle }));
  });

  it('keeps the redrive deduplication id within 128 characters', async () => {
    // Prepare: a DLQ message whose deduplication id already uses all 128 characters.
    const { queueUrl, dlqUrl } = await createQueues(sqs, { fifo: true });
    const longId = 'd'.repeat(128);
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: dlqUrl,
        MessageBody: JSON.stringify(paymentEnvelope(600)),
        MessageGroupId: 'case-C-2',
        MessageDeduplicationId: longId,
      }),
    );

    // Act
    const result = await dlqRedrive(
      { store, sqs, out: createMemoryOutput(), clock: fastClock() },
      { dlqUrl, queueUrl, consumer: 'case-worker', max: 1, waitSeconds: 0 },
    );

    // Assess
    const received = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MessageSystemAttributeNames: ['All'] }),
    );
    const suffix = `-redrive-${result.moves[0]?.auditId}`;
    expect(received.Messages?.[0]?.Attributes?.MessageDeduplicationId).toBe(
      `${longId.slice(0, 128 - suffix.length)}${suffix}`,
    );
    expect(received.Messages?.[0]?.Attributes?.MessageDeduplicationId).toHaveLength(128);
  });
});
