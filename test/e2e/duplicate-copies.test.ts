import { describe, expect, it } from 'vitest';
import { systemClock } from '../../tools/ops/clock.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { inboxHot } from '../../tools/ops/stores/postgres/inbox-hot.ts';
import { inboxStats } from '../../tools/ops/stores/postgres/inbox-stats.ts';
import { createTestDatabase } from '../support/database.ts';
import { paymentBody } from '../support/payment-body.ts';
import {
  expectRedeliveryThenResend,
  injectRedeliveryAndResend,
  printingTelemetry,
} from './duplicate-copies-scenario.ts';
import { localQueueFixture } from './local-queue-fixture.ts';
import { exampleWorker } from './worker-fixture.ts';

const db = await createTestDatabase({ roles: true });
const fixture = await localQueueFixture();

describe('Duplicates told apart on PostgreSQL: redelivery (same messageId) or resend (new messageId)', () => {
  for (const commitMode of ['per-message', 'per-batch'] as const) {
    it(`counts a redelivery after a crash before delete and a resend, in metrics, row and stats (${commitMode})`, async () => {
      // Prepare
      const id = `dup-${commitMode}`;
      const consumer = `worker-${commitMode}`; // its own inbox: the stats are this test's alone
      const { handler } = exampleWorker(db, fixture.as('worker').sqs, {
        commitMode,
        consumer,
        ...printingTelemetry(),
      });

      // Act
      const seen = await injectRedeliveryAndResend({
        fixture,
        sqs: fixture.as('worker').sqs,
        handler,
        body: paymentBody(id, 'acct-1'),
      });

      // Assess: EMF and log lines
      expectRedeliveryThenResend(seen);
      // Assess: one effect, and the counters on the row
      expect(await db.sql`select 1 from ledger_entries where source_event_id = ${id}`).toHaveLength(1);
      const [row] = await db.sql`
        select status, receive_count, redelivery_count, resend_count, last_duplicate_kind
        from worker_inbox where idempotency_key = ${`payment:${id}`}
      `;
      expect(row).toEqual({
        status: 'COMPLETED',
        receive_count: 3,
        redelivery_count: 1,
        resend_count: 1,
        last_duplicate_kind: 'RESEND',
      });
      // Assess: inbox stats and inbox hot
      const out = createMemoryOutput();
      const stats = await inboxStats({ sql: db.sql, out, clock: systemClock }, { consumer });
      expect(stats.duplicates).toEqual({ redeliveries: 1, resends: 1, keysRedelivered: 1 });
      expect(stats.deliveriesLastHour).toEqual({ keys: 1, maxPerKey: 3, avgPerKey: 3, keysSeenAgain: 1 });
      expect(out.stdout()).toContain(
        'Duplicates kept on the inbox: 1 redeliveries (the same SQS message again, on 1 keys), 1 resends (a new message, same key)\n' +
          'Deliveries per key seen in the last hour: 1 keys, max 3, avg 3.00, 1 delivered more than once',
      );
      const hot = await inboxHot(
        { sql: db.sql, out: createMemoryOutput(), clock: systemClock },
        { consumer, limit: 10, sinceSeconds: 3600 },
      );
      expect(hot.aggregates).toEqual([
        { aggregateType: 'Payment', aggregateId: id, keys: 1, retries: 2, inFlight: 0, lockWaits: 0 },
      ]);
      expect(hot.keys.find((k) => k.idempotencyKey === `payment:${id}`)).toMatchObject({
        aggregateType: 'Payment',
        aggregateId: id,
        retries: 2,
        inFlight: 0,
        lockWaits: 0,
      });
    });
  }
});
