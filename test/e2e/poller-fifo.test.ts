import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { exampleEnvelope } from '../../tools/local/example-envelope.ts';
import { queueCounts } from '../../tools/local/local-queues.ts';
import { createTestDatabase } from '../support/database.ts';
import { localQueueFixture } from './local-queue-fixture.ts';
import { startTestPoller } from './poller-fixture.ts';

// The components connect as their database roles (provisioned by the migration function's code); the test's own
// setup and assertions as the database's owner.
const db = await createTestDatabase({ roles: true });
const fixture = await localQueueFixture();
const { sqs } = fixture;

describe('Poller on a FIFO queue', () => {
  it('applies each message group in order while several batches run at once', async () => {
    // Prepare: six groups of five payments, sent interleaved: more groups than a batch holds.
    const { queueUrl } = await fixture.queues({ fifo: true, visibilityTimeoutSeconds: 30 });
    const { poller, outcomes } = await startTestPoller({
      sqs: fixture.as('poller').sqs,
      queueUrl,
      sql: db.as('worker', { max: 4, prepare: false }),
      probe: async () => {},
      poller: { batchSize: 2 },
    });
    const { SendMessageCommand } = await import('@aws-sdk/client-sqs');
    const groups = ['group-a', 'group-b', 'group-c', 'group-d', 'group-e', 'group-f'];
    for (let i = 0; i < 5; i += 1) {
      for (const group of groups) {
        const id = `${group}-${i}`;
        await sqs.send(
          new SendMessageCommand({
            QueueUrl: queueUrl,
            MessageGroupId: group,
            MessageDeduplicationId: id,
            MessageBody: JSON.stringify(
              exampleEnvelope({
                messageType: 'PaymentCaptured',
                idempotencyKey: id,
                aggregateType: 'Payment',
                aggregateId: id,
                payload: { paymentId: id, accountId: group, amount: i + 1, currency: 'EUR' },
              }),
            ),
          }),
        );
      }
    }

    // Act
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const counts = await queueCounts(sqs, queueUrl);
      if (counts.visible + counts.inFlight === 0 && poller.stats.inFlight === 0) break;
      await sleep(100);
    }

    // Assess: every payment once, and within each group in the order sent.
    const completed = outcomes.outcomes.filter((o) => o.result === 'COMPLETED').map((o) => o.idempotencyKey);
    expect(completed.length).toBe(30);
    for (const group of groups) {
      expect(completed.filter((key) => key?.startsWith(group))).toEqual(
        Array.from({ length: 5 }, (_, i) => `${group}-${i}`),
      );
    }
    expect(poller.stats.batches).toBeGreaterThan(3);
    expect(poller.stats.maxInFlight).toBeGreaterThan(2); // batches of two at once
    const [ledger] = await db.sql`select count(*)::int as count from ledger_entries`;
    expect(ledger?.count).toBe(30);
  });
});
