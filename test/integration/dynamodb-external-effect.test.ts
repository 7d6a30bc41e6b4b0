import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { httpNotificationProvider } from '../../lambda/effects/index.ts';
import { RetryableError, TerminalError } from '../../lambda/errors.ts';
import { performDynamoExternalEffect } from '../../lambda/stores/dynamodb/dynamo-external-effect.ts';
import { EFFECT_PK_PREFIX, EFFECT_SK } from '../../lambda/stores/dynamodb/item-keys.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { startFakeNotificationProvider } from '../support/fake-notification-provider.ts';

// The external-effect log on DynamoDB Local, case by case as on PostgreSQL (external-effect-log.test.ts).

const dynamo = useTestDynamoDb();
const fake = await startFakeNotificationProvider();
const provider = httpNotificationProvider({ url: fake.url, name: 'fake-notifications' });
let table: string;
beforeAll(async () => {
  table = await dynamo.createTable('effects');
});

const request = {
  recipient: 'case-officer@example.com',
  subject: 'Case escalated',
  body: 'Please look at it.',
};

const notify = (
  effectKey: string,
  options: {
    client?: typeof dynamo.doc;
    send?: typeof provider.send;
    req?: typeof request;
    ttlSeconds?: number;
  } = {},
) =>
  performDynamoExternalEffect({
    client: options.client ?? dynamo.doc,
    tableName: table,
    effectKey,
    provider: provider.name,
    operation: 'send-notification',
    request: options.req ?? request,
    call: (idempotencyKey) => (options.send ?? provider.send)(options.req ?? request, idempotencyKey),
    ...(options.ttlSeconds === undefined ? {} : { ttlSeconds: options.ttlSeconds }),
  });

const logItem = async (effectKey: string) =>
  (
    await dynamo.doc.send(
      new GetCommand({
        TableName: table,
        Key: { PK: `${EFFECT_PK_PREFIX}${effectKey}`, SK: EFFECT_SK },
        ConsistentRead: true,
      }),
    )
  ).Item;

describe('Function: performDynamoExternalEffect()', () => {
  it('writes PENDING before calling the provider with the effect key, then stores the reference', async () => {
    // Prepare
    const key = `case-worker/notify:${randomUUID()}`;
    const seenDuringCall: unknown[] = [];
    fake.onRequest = async () => {
      seenDuringCall.push((await logItem(key))?.status);
    };

    // Act
    const result = await notify(key, { ttlSeconds: 3600 }).finally(() => {
      fake.onRequest = undefined;
    });

    // Assess
    expect(seenDuringCall).toEqual(['PENDING']);
    expect(fake.keys.at(-1)).toBe(key);
    expect(result).toMatchObject({ replayed: false, attempts: 1 });
    const item = await logItem(key);
    expect(item).toMatchObject({
      status: 'COMPLETED',
      provider: 'fake-notifications',
      operation: 'send-notification',
      providerReference: result.reference,
      attempts: 1,
    });
    expect(item?.ttl).toBeGreaterThan(Date.now() / 1000 + 3000);
    expect(JSON.stringify(item)).not.toContain(request.recipient); // only the request's hash is kept
  });

  it('returns the stored reference without calling the provider when the log says COMPLETED', async () => {
    // Prepare
    const key = `case-worker/notify:${randomUUID()}`;
    const first = await notify(key);
    const callsBefore = fake.calls;

    // Act
    const again = await notify(key);

    // Assess
    expect(again).toMatchObject({ reference: first.reference, replayed: true, attempts: 1 });
    expect(fake.calls).toBe(callsBefore);
  });

  it('retries with the same key after a crash between the call and recording its result; the provider applies once', async () => {
    // Prepare: a client that loses its connection once the provider answered (its COMPLETED write fails).
    const key = `case-worker/notify:${randomUUID()}`;
    const appliedBefore = fake.applied;
    let called = false;
    const doomed = {
      send: (command: { constructor: { name: string } }) =>
        called && command.constructor.name === 'UpdateCommand'
          ? Promise.reject(Object.assign(new Error('socket hang up'), { name: 'TimeoutError' }))
          : dynamo.doc.send(command as never),
    } as unknown as typeof dynamo.doc;
    const sendThenDie: typeof provider.send = async (req, idempotencyKey) => {
      const answer = await provider.send(req, idempotencyKey);
      called = true;
      return answer;
    };

    // Act
    await expect(notify(key, { client: doomed, send: sendThenDie })).rejects.toThrow('socket hang up');
    const afterCrash = await logItem(key);
    const retry = await notify(key);

    // Assess
    expect(afterCrash).toMatchObject({ status: 'PENDING', attempts: 1 });
    expect(afterCrash?.providerReference).toBeUndefined();
    expect(fake.keys.slice(-2)).toEqual([key, key]);
    expect(fake.applied).toBe(appliedBefore + 1);
    expect(retry).toMatchObject({ replayed: false, attempts: 2 });
    expect(await logItem(key)).toMatchObject({
      status: 'COMPLETED',
      providerReference: retry.reference,
      attempts: 2,
    });
  });

  it('treats a lost answer as an unknown outcome: retryable, recorded, retried with the same key', async () => {
    // Prepare
    const key = `case-worker/notify:${randomUUID()}`;
    const appliedBefore = fake.applied;
    fake.dropNextAnswer();

    // Act
    const lost = notify(key);
    await expect(lost).rejects.toBeInstanceOf(RetryableError);
    await expect(lost).rejects.toMatchObject({ code: 'EFFECT_OUTCOME_UNKNOWN' });
    const afterLoss = await logItem(key);
    const retry = await notify(key);

    // Assess
    expect(fake.applied).toBe(appliedBefore + 1);
    expect(afterLoss).toMatchObject({ status: 'PENDING', attempts: 1 });
    expect(afterLoss?.lastError).toContain('EFFECT_OUTCOME_UNKNOWN');
    expect(afterLoss?.lastError).not.toContain(request.recipient);
    expect(retry).toMatchObject({ replayed: false, attempts: 2 });
    const completed = await logItem(key);
    expect(completed).toMatchObject({ status: 'COMPLETED', providerReference: retry.reference });
    expect(completed?.lastError).toBeUndefined();
  });

  it('rejects a different request under the same key as terminal EFFECT_HASH_MISMATCH, without calling', async () => {
    // Prepare
    const key = `case-worker/notify:${randomUUID()}`;
    await notify(key);
    const callsBefore = fake.calls;

    // Act
    const attempt = notify(key, { req: { ...request, recipient: 'someone-else@example.com' } });

    // Assess
    await expect(attempt).rejects.toBeInstanceOf(TerminalError);
    await expect(attempt).rejects.toMatchObject({ code: 'EFFECT_HASH_MISMATCH' });
    await expect(attempt).rejects.not.toThrow(/someone-else/);
    expect(fake.calls).toBe(callsBefore);
    expect(await logItem(key)).toMatchObject({ status: 'COMPLETED', attempts: 1 });
  });

  it('records a provider rejection as FAILED_TERMINAL and never calls again for that key', async () => {
    // Prepare
    const key = `case-worker/notify:${randomUUID()}`;
    fake.failNext(400);

    // Act
    await expect(notify(key)).rejects.toMatchObject({ code: 'EFFECT_REJECTED' });
    const callsBefore = fake.calls;
    const again = notify(key);

    // Assess
    await expect(again).rejects.toMatchObject({ code: 'EFFECT_FAILED_TERMINAL' });
    expect(fake.calls).toBe(callsBefore);
    const item = await logItem(key);
    expect(item).toMatchObject({ status: 'FAILED_TERMINAL' });
    expect(item?.lastError).toContain('rejected the notification with 400');
  });

  it('keeps the item PENDING when the provider is unavailable, and completes on the next attempt', async () => {
    // Prepare
    const key = `case-worker/notify:${randomUUID()}`;
    fake.failNext(503);

    // Act
    await expect(notify(key)).rejects.toMatchObject({ code: 'EFFECT_PROVIDER_UNAVAILABLE' });
    const result = await notify(key);

    // Assess
    expect(result.attempts).toBe(2);
    expect(await logItem(key)).toMatchObject({ status: 'COMPLETED', attempts: 2 });
  });

  it('gives two attempts at once one effect: the provider deduplicates on the key, both return its reference', async () => {
    // Prepare
    const key = `case-worker/notify:${randomUUID()}`;
    const appliedBefore = fake.applied;

    // Act
    const [a, b] = await Promise.all([notify(key), notify(key)]);

    // Assess: however the two interleave, one effect and one reference.
    expect(fake.applied).toBe(appliedBefore + 1);
    expect(a.reference).toBe(b.reference);
    const item = await logItem(key);
    expect(item).toMatchObject({ status: 'COMPLETED', providerReference: a.reference });
    expect([1, 2]).toContain(item?.attempts); // 1 when the second attempt came after the first completed
  });

  it('refuses an effect key longer than 200 characters as terminal EFFECT_INVALID, without an item or a call', async () => {
    const key = `case-worker/${'x'.repeat(200)}`;
    const callsBefore = fake.calls;
    await expect(notify(key)).rejects.toMatchObject({ code: 'EFFECT_INVALID' });
    expect(fake.calls).toBe(callsBefore);
    expect(await logItem(key)).toBeUndefined();
  });
});
