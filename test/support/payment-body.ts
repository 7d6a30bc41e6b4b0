import { exampleEnvelope } from '../../tools/local/example-envelope.ts';

/** The body of a `PaymentCaptured` message of 10 EUR on `accountId`: key `payment:<id>`, aggregate `id`. */
export function paymentBody(id: string, accountId: string): string {
  return JSON.stringify(
    exampleEnvelope({
      messageType: 'PaymentCaptured',
      idempotencyKey: `payment:${id}`,
      aggregateType: 'Payment',
      aggregateId: id,
      payload: { paymentId: id, accountId, amount: 10, currency: 'EUR' },
    }),
  );
}
