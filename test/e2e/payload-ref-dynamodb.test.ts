import { createHash, randomUUID } from 'node:crypto';
import { DeleteObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { GetCommand, paginateScan } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { balanceItemKey, ledgerItemKey } from '../../lambda/domain/dynamodb/index.ts';
import { inboxKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import type { PayloadRef } from '../../lambda/worker/envelope.ts';
import { envelopeFactory, lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';
import { dynamoPayloadWorkerFixture } from './dynamo-payload-worker-fixture.ts';

process.env.POWERTOOLS_METRICS_DISABLED = 'true';

// payloadRef on the DynamoDB store: the worker's S3 reads (its role's key, fauxqs S3) and its table calls (its role,
// through the local IAM layer in front of DynamoDB Local), the example domain's DynamoDB handlers.
const deployment = await dynamoPayloadWorkerFixture('payload-ref');
const { local, dynamo } = deployment;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Uploads `bytes` as a producer would (the operator's key) and returns the reference it sends. */
async function upload(bytes: Buffer, key = `payloads/${randomUUID()}`): Promise<PayloadRef> {
  await local.s3.send(new PutObjectCommand({ Bucket: deployment.bucket, Key: key, Body: bytes }));
  return { bucket: deployment.bucket, key, sha256: sha256(bytes), size: bytes.length };
}

const paymentBytes = (paymentId: string, accountId: string) =>
  Buffer.from(JSON.stringify({ paymentId, accountId, amount: '12.00', currency: 'EUR' }));

/** A PaymentCaptured envelope whose payload is in S3 at `ref`. */
function paymentByRef(ref: PayloadRef, key = `payment:${randomUUID()}:captured`) {
  const { payload: _inline, ...envelope } = envelopeFactory({ idempotencyKey: key });
  return { ...envelope, idempotencyKey: key, payloadRef: ref };
}

const get = async (key: { PK: string; SK: string }) =>
  (await dynamo.doc.send(new GetCommand({ TableName: deployment.table, Key: key, ConsistentRead: true })))
    .Item;
const inboxItem = (key: string) => get(inboxKey('case-worker', key));
async function quarantineCodes(idempotencyKey: string): Promise<string[]> {
  const codes: string[] = [];
  for await (const page of paginateScan(
    { client: dynamo.doc },
    { TableName: deployment.table, ConsistentRead: true },
  )) {
    for (const item of page.Items ?? []) {
      if (String(item.PK).startsWith('QUARANTINE#') && item.idempotencyKey === idempotencyKey)
        codes.push(String(item.reasonCode));
    }
  }
  return codes;
}

describe('payloadRef on the DynamoDB store', () => {
  it('reads, verifies and applies a referenced payload once despite duplicates', async () => {
    // Prepare
    const paymentId = `PAY-${randomUUID()}`;
    const accountId = `ACC-${randomUUID()}`;
    const envelope = paymentByRef(await upload(paymentBytes(paymentId, accountId)));
    const first = sqsRecordFactory(envelope);

    // Act
    const r1 = await deployment.worker(sqsEvent([first]), lambdaContext());
    const r2 = await deployment.worker(
      sqsEvent([sqsRecordFactory(envelope), sqsRecordFactory(envelope, { receiveCount: 2 })]),
      lambdaContext(),
    );

    // Assess: the payload's values (from S3) applied once.
    expect([r1.batchItemFailures, r2.batchItemFailures]).toEqual([[], []]);
    expect(await get(ledgerItemKey(paymentId))).toBeDefined();
    expect(await get(balanceItemKey(accountId, 'EUR'))).toMatchObject({ balance: 12, entries: 1 });
    expect(await inboxItem(envelope.idempotencyKey)).toMatchObject({ status: 'COMPLETED' });
  });

  it('quarantines an object whose bytes do not match the reference (PAYLOAD_CHECKSUM_MISMATCH), applying nothing', async () => {
    // Prepare: the reference names other bytes than the object holds.
    const paymentId = `PAY-${randomUUID()}`;
    const accountId = `ACC-${randomUUID()}`;
    const ref = await upload(paymentBytes(paymentId, accountId));
    const envelope = paymentByRef({ ...ref, sha256: sha256(Buffer.from('other bytes')) });

    // Act
    const response = await deployment.worker(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(await quarantineCodes(envelope.idempotencyKey)).toEqual(['PAYLOAD_CHECKSUM_MISMATCH']);
    expect(await get(ledgerItemKey(paymentId))).toBeUndefined();
    expect(await get(balanceItemKey(accountId, 'EUR'))).toBeUndefined();
  });

  it('acknowledges a duplicate of a completed message without reading S3 again, even once the object is gone', async () => {
    // Prepare
    const paymentId = `PAY-${randomUUID()}`;
    const accountId = `ACC-${randomUUID()}`;
    const envelope = paymentByRef(await upload(paymentBytes(paymentId, accountId)));
    await deployment.worker(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext());
    await local.s3.send(new DeleteObjectCommand({ Bucket: deployment.bucket, Key: envelope.payloadRef.key }));

    // Act
    const response = await deployment.worker(
      sqsEvent([sqsRecordFactory(envelope, { receiveCount: 2 })]),
      lambdaContext(),
    );

    // Assess: a DUPLICATE no-op, not a PAYLOAD_NOT_FOUND quarantine.
    expect(response.batchItemFailures).toEqual([]);
    expect(await inboxItem(envelope.idempotencyKey)).toMatchObject({ status: 'COMPLETED' });
    expect(await quarantineCodes(envelope.idempotencyKey)).toEqual([]);
    expect(await get(balanceItemKey(accountId, 'EUR'))).toMatchObject({ entries: 1 });
  });

  it('rejects the same idempotency key with another object as IDEMPOTENCY_HASH_MISMATCH', async () => {
    // Prepare
    const paymentId = `PAY-${randomUUID()}`;
    const accountId = `ACC-${randomUUID()}`;
    const key = `payment:${paymentId}:captured`;
    await deployment.worker(
      sqsEvent([sqsRecordFactory(paymentByRef(await upload(paymentBytes(paymentId, accountId)), key))]),
      lambdaContext(),
    );
    const otherAccount = `ACC-${randomUUID()}`;
    const other = paymentByRef(await upload(paymentBytes(paymentId, otherAccount)), key);

    // Act
    const response = await deployment.worker(sqsEvent([sqsRecordFactory(other)]), lambdaContext());

    // Assess: the first request's effect stands; the second one applies nothing.
    expect(response.batchItemFailures).toEqual([]);
    expect(await quarantineCodes(key)).toEqual(['IDEMPOTENCY_HASH_MISMATCH']);
    expect(await get(balanceItemKey(accountId, 'EUR'))).toMatchObject({ entries: 1 });
    expect(await get(balanceItemKey(otherAccount, 'EUR'))).toBeUndefined();
  });
});
