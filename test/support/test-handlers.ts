import { z } from 'zod';
import { RetryableError } from '../../lambda/errors.ts';
import { defineHandler } from '../../lambda/stores/postgres/message-handler.ts';

/** `AlwaysRetryable`: a handler whose dependency never recovers. */
export const alwaysRetryable = defineHandler({
  messageType: 'AlwaysRetryable',
  schemaVersion: 1,
  payload: z.object({ note: z.string().optional() }),
  async handle() {
    throw new RetryableError('DOWNSTREAM_UNAVAILABLE', 'the downstream service answered 503');
  },
});

/** `SlowLedgerWrite`: sleeps in the database for `sleepMs`, then writes a ledger row keyed by `paymentId`. */
export const slowLedgerWrite = defineHandler({
  messageType: 'SlowLedgerWrite',
  schemaVersion: 1,
  payload: z.object({ paymentId: z.string(), sleepMs: z.number().int().min(0) }),
  async handle({ sql, payload }) {
    await sql`select pg_sleep(${payload.sleepMs / 1000})`;
    await sql`
      insert into ledger_entries (entry_id, account_id, amount, currency, source_event_id)
      values (${payload.paymentId}, 'ACC-SLOW', 1, 'EUR', ${payload.paymentId})
    `;
    return { resultRef: `ledger_entries/${payload.paymentId}` };
  },
});
