import { ChangeMessageVisibilityCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import type { DlqPeekResult } from '../../tools/ops/dlq-peek.ts';
import { dlqPeek } from '../../tools/ops/dlq-peek.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { postgresOpsStore } from '../../tools/ops/stores/postgres/index.ts';
import { createTestDatabase } from '../support/database.ts';
import { createQueues, depth, paymentEnvelope, seedInbox, sendAll, startOpsSqs } from './ops-fixture.ts';

const db = await createTestDatabase();
const store = postgresOpsStore({ sql: () => db.sql });
const { sqs } = await startOpsSqs();

describe('Function: dlqPeek()', () => {
  it('reads DLQ messages without removing them, joins the inbox and groups by fingerprint', async () => {
    // Prepare: 3 ACCOUNT_CLOSED payments, 1 completed, 1 never recorded, 1 invalid body; one of them reaches
    // the DLQ through the source queue's RedrivePolicy.
    const { queueUrl, dlqUrl } = await createQueues(sqs, { maxReceiveCount: 1 });
    const closed = [0, 1, 2].map((i) => paymentEnvelope(i));
    const done = paymentEnvelope(3);
    const unseen = paymentEnvelope(4);
    for (const envelope of closed)
      await seedInbox(db.sql, envelope, {
        status: 'FAILED_TERMINAL',
        failureCode: 'ACCOUNT_CLOSED',
        attempts: 4,
      });
    await seedInbox(db.sql, done, { status: 'COMPLETED' });
    await sendAll(sqs, queueUrl, [closed[0]]);
    const first = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl }));
    await sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: queueUrl,
        ReceiptHandle: first.Messages?.[0]?.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl })); // second receive > maxReceiveCount: moved to the DLQ
    await sendAll(sqs, dlqUrl, [closed[1], closed[2], done, unseen, 'not json {']);
    const out = createMemoryOutput({ json: true });

    // Act
    const result = await dlqPeek(
      { store, sqs, out },
      { dlqUrl, consumer: 'case-worker', max: 10, waitSeconds: 0 },
    );

    // Assess
    expect(result.peeked).toBe(6);
    expect(result.groups).toEqual([
      {
        messageType: 'PaymentCaptured',
        code: 'ACCOUNT_CLOSED',
        count: 3,
        sampleKeys: closed.map((e) => e.idempotencyKey),
      },
      { messageType: '(unknown)', code: 'INVALID_ENVELOPE', count: 1, sampleKeys: [] },
      { messageType: 'PaymentCaptured', code: 'COMPLETED', count: 1, sampleKeys: [done.idempotencyKey] },
      { messageType: 'PaymentCaptured', code: 'NO_INBOX_ROW', count: 1, sampleKeys: [unseen.idempotencyKey] },
    ]);
    const row = result.messages.find((m) => m.idempotencyKey === closed[1]?.idempotencyKey);
    expect(row).toMatchObject({ inboxStatus: 'FAILED_TERMINAL', inboxAttempts: 4, code: 'ACCOUNT_CLOSED' });
    expect(await depth(sqs, dlqUrl)).toEqual({ visible: 6, inFlight: 0 }); // all left in place, visible again
    expect(out.lastJson<DlqPeekResult>().peeked).toBe(6);
    expect(out.stdout()).not.toContain('ACC-1'); // no payload values
  });

  it('reads at most --max messages and prints a table without payloads', async () => {
    // Prepare
    const { dlqUrl } = await createQueues(sqs);
    await sendAll(
      sqs,
      dlqUrl,
      [0, 1, 2, 3, 4].map((i) => paymentEnvelope(10 + i)),
    );
    const out = createMemoryOutput();

    // Act
    const result = await dlqPeek(
      { store, sqs, out },
      { dlqUrl, consumer: 'case-worker', max: 2, waitSeconds: 0 },
    );

    // Assess
    expect(result.peeked).toBe(2);
    expect(out.stdout()).toContain('NO_INBOX_ROW');
    expect(out.stdout()).toContain('Peeked 2 message(s)');
    expect(out.stdout()).not.toContain('ACC-1');
    expect(await depth(sqs, dlqUrl)).toEqual({ visible: 5, inFlight: 0 });
  });
});
