// From util-dynamodb (the marshaller), not lib-dynamodb: the worker's entry does not load the DynamoDB client for it.
import { NumberValueImpl as NumberValue } from '@aws-sdk/util-dynamodb';
import { defineDynamoHandler } from '../../stores/dynamodb/index.ts';
import { paymentCapturedPayload } from '../payment-captured.ts';

/** The key of a payment's ledger item in the DynamoDB example domain. */
export const ledgerItemKey = (paymentId: string) => ({ PK: `LEDGER#${paymentId}`, SK: 'ENTRY' });
/** The key of an account's balance item (one per currency) in the DynamoDB example domain. */
export const balanceItemKey = (accountId: string, currency: string) => ({
  PK: `ACCOUNT#${accountId}`,
  SK: `BALANCE#${currency}`,
});

/**
 * `PaymentCaptured` v1 `{ paymentId, accountId, amount, currency }` on DynamoDB: in one transaction, the ledger item
 * `LEDGER#<paymentId>` is created (create-only: `attribute_not_exists(PK)`) and the amount is added to the account's
 * balance item. A payment replayed under a new idempotency key fails the ledger item's condition, so the balance is
 * not added twice; the rule `'applied'` acknowledges it as COMPLETED (pattern document §7, create-only effect).
 * Amounts are decimal numbers (DynamoDB numbers are exact decimals up to 38 digits).
 */
export const paymentCapturedDynamo = defineDynamoHandler({
  messageType: 'PaymentCaptured',
  schemaVersion: 1,
  payload: paymentCapturedPayload,
  async handle({ table, payload, envelope }) {
    const amount = NumberValue.from(String(payload.amount));
    return {
      writes: [
        {
          Put: {
            TableName: table,
            Item: {
              ...ledgerItemKey(payload.paymentId),
              accountId: payload.accountId,
              amount,
              currency: payload.currency,
              sourceEventId: envelope.idempotencyKey,
            },
            ConditionExpression: 'attribute_not_exists(PK)',
          },
          onConditionFailed: () => 'applied',
        },
        {
          Update: {
            TableName: table,
            Key: balanceItemKey(payload.accountId, payload.currency),
            UpdateExpression: 'ADD balance :amount, entries :one',
            ExpressionAttributeValues: { ':amount': amount, ':one': 1 },
          },
        },
      ],
      resultRef: `ledger/${payload.paymentId}`,
    };
  },
});
