import * as z from 'zod';
import { defineHandler } from '../worker/message-handler.ts';

/**
 * `PaymentCaptured` v1 `{ paymentId, accountId, amount, currency }`: inserts one ledger entry per payment
 * (`source_event_id = paymentId`, on conflict do nothing), so a replay under a new idempotency key still
 * writes one row (pattern document §7, create-only effect).
 */
export const paymentCaptured = defineHandler({
  messageType: 'PaymentCaptured',
  schemaVersion: 1,
  payload: z.object({
    paymentId: z.string().min(1).max(200),
    accountId: z.string().min(1).max(200),
    amount: z.union([z.number().finite(), z.string().regex(/^-?\d+(\.\d+)?$/)]),
    currency: z.string().regex(/^[A-Z]{3}$/),
  }),
  async handle({ sql, payload }) {
    await sql`
      insert into ledger_entries (entry_id, account_id, amount, currency, source_event_id)
      values (${`ledger-${payload.paymentId}`}, ${payload.accountId}, ${String(payload.amount)}, ${payload.currency}, ${payload.paymentId})
      on conflict (source_event_id) do nothing
    `;
    return { resultRef: `ledger_entries/ledger-${payload.paymentId}` };
  },
});
