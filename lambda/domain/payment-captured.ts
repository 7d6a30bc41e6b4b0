import * as z from 'zod/mini';
import { defineHandler } from '../index.ts';

/** The payload of `PaymentCaptured` v1, the message's contract on either store. */
export const paymentCapturedPayload = z.object({
  paymentId: z.string().check(z.minLength(1), z.maxLength(200)),
  accountId: z.string().check(z.minLength(1), z.maxLength(200)),
  amount: z.union([z.number(), z.string().check(z.regex(/^-?\d+(\.\d+)?$/))]),
  currency: z.string().check(z.regex(/^[A-Z]{3}$/)),
});

/**
 * `PaymentCaptured` v1 `{ paymentId, accountId, amount, currency }`: inserts one ledger entry per payment
 * (`source_event_id = paymentId`, on conflict do nothing), so a replay under a new idempotency key still
 * writes one row (pattern document §7, create-only effect).
 */
export const paymentCaptured = defineHandler({
  messageType: 'PaymentCaptured',
  schemaVersion: 1,
  payload: paymentCapturedPayload,
  // Known from the payload: stored by the inbox claim, no statement after the handler.
  resultRef: ({ payload }) => `ledger_entries/ledger-${payload.paymentId}`,
  async handle({ sql, payload }) {
    await sql`
      insert into ledger_entries (entry_id, account_id, amount, currency, source_event_id)
      values (${`ledger-${payload.paymentId}`}, ${payload.accountId}, ${String(payload.amount)}, ${payload.currency}, ${payload.paymentId})
      on conflict (source_event_id) do nothing
    `;
    return undefined;
  },
});
