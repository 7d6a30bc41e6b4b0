import { describe, expect, it } from 'vitest';
import { exampleEnvelope } from '../../tools/local/example-envelope.ts';
import { queueCounts } from '../../tools/local/local-queues.ts';
import { createTestDatabase } from '../support/database.ts';
import { jsonWithNestedArrays, NESTED } from '../support/nested-json.ts';
import { paymentBody } from '../support/payment-body.ts';
import { waitFor } from '../support/wait-for.ts';
import { localQueueFixture } from './local-queue-fixture.ts';
import { startTestPoller } from './poller-fixture.ts';

// The components connect as their database roles (provisioned by the migration function's code); the test's own
// setup and assertions as the database's owner.
const db = await createTestDatabase({ roles: true });
const fixture = await localQueueFixture();
const { sqs } = fixture;

describe('Poller with a body nested 5,000 levels deep (fauxqs over HTTP, real PostgreSQL)', () => {
  it('settles its batch: deletes the good payments it applied and the deep one it quarantined, and logs no poller_batch_failed', async () => {
    // Prepare: two payments and, between them, a valid payment whose payload also nests 5,000 arrays (10 KB).
    const { queueUrl, dlqUrl } = await fixture.queues({ maxReceiveCount: 3, visibilityTimeoutSeconds: 30 });
    const { lines } = await startTestPoller({
      sqs: fixture.as('poller').sqs,
      queueUrl,
      sql: db.as('worker', { max: 2 }),
      probe: async () => {},
      poller: { visibilitySeconds: 30, batchSize: 10 },
    });
    const deep = jsonWithNestedArrays(
      exampleEnvelope({
        messageType: 'PaymentCaptured',
        idempotencyKey: 'deep-pay-deep',
        aggregateType: 'Payment',
        aggregateId: 'deep-pay-deep',
        payload: {
          paymentId: 'deep-pay-deep',
          accountId: 'acct-deep',
          amount: 10,
          currency: 'EUR',
          extra: NESTED,
        },
      }),
      5_000,
    );

    // Act
    await fixture.send(queueUrl, [
      paymentBody('deep-pay-0', 'acct-deep'),
      deep,
      paymentBody('deep-pay-1', 'acct-deep'),
    ]);
    await waitFor(
      'the payments applied, the deep body quarantined and the queue empty',
      async () => {
        const [ledger] = await db.sql<{ count: number }[]>`
          select count(*)::int as count from ledger_entries where source_event_id in ('deep-pay-0', 'deep-pay-1')
        `;
        const quarantined = await db.sql`select 1 from worker_quarantine where body = ${deep}`;
        const counts = await queueCounts(sqs, queueUrl);
        return (
          ledger?.count === 2 &&
          quarantined.length === 1 &&
          counts.visible + counts.inFlight + counts.delayed === 0
        );
      },
      20_000,
    );

    // Assess
    expect(lines.filter((line) => line.message === 'poller_batch_failed')).toEqual([]);
    const [row] =
      await db.sql`select reason_code, idempotency_key from worker_quarantine where body = ${deep}`;
    expect(row).toEqual({ reason_code: 'PAYLOAD_TOO_DEEP', idempotency_key: 'deep-pay-deep' });
    expect((await db.sql`select 1 from ledger_entries where source_event_id = 'deep-pay-deep'`).length).toBe(
      0,
    );
    expect(await fixture.receiveAll(dlqUrl)).toEqual([]);
  });
});
