import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { httpNotificationProvider, performExternalEffect } from '../../lambda/effects/index.ts';
import { RetryableError, TerminalError } from '../../lambda/errors.ts';
import { MAX_PAYLOAD_DEPTH } from '../../lambda/worker/json-depth.ts';
import { createTestDatabase } from '../support/database.ts';
import { startFakeNotificationProvider } from '../support/fake-notification-provider.ts';
import { nestedArrays } from '../support/nested-json.ts';

const db = await createTestDatabase();
const fake = await startFakeNotificationProvider();
const provider = httpNotificationProvider({ url: fake.url, name: 'fake-notifications' });

const request = {
  recipient: 'case-officer@example.com',
  subject: 'Case escalated',
  body: 'Please look at it.',
};

const notify = (
  effectKey: string,
  options: { sql?: typeof db.sql; send?: typeof provider.send; req?: typeof request } = {},
) =>
  performExternalEffect({
    sql: options.sql ?? db.sql,
    effectKey,
    provider: provider.name,
    operation: 'send-notification',
    request: options.req ?? request,
    call: (idempotencyKey) => (options.send ?? provider.send)(options.req ?? request, idempotencyKey),
  });

const logRow = async (effectKey: string) =>
  (await db.sql`select * from external_effect_log where effect_key = ${effectKey}`)[0];

describe('Function: performExternalEffect()', () => {
  it('commits PENDING before calling the provider with the effect key, then stores the reference', async () => {
    // Prepare
    const key = `notify:${randomUUID()}`;
    const seenDuringCall: unknown[] = [];
    fake.onRequest = async () => {
      // Another connection: only committed rows are visible.
      seenDuringCall.push(
        (await db.sql`select status from external_effect_log where effect_key = ${key}`)[0],
      );
    };

    // Act
    const result = await notify(key).finally(() => {
      fake.onRequest = undefined;
    });

    // Assess
    expect(seenDuringCall).toEqual([{ status: 'PENDING' }]);
    expect(fake.keys.at(-1)).toBe(key);
    expect(result).toMatchObject({ replayed: false, attempts: 1 });
    expect(await logRow(key)).toMatchObject({
      status: 'COMPLETED',
      provider: 'fake-notifications',
      operation: 'send-notification',
      provider_reference: result.reference,
      attempts: 1,
    });
  });

  it('returns the stored reference without calling the provider when the log says COMPLETED', async () => {
    // Prepare
    const key = `notify:${randomUUID()}`;
    const first = await notify(key);
    const callsBefore = fake.calls;

    // Act
    const again = await notify(key);

    // Assess
    expect(again).toMatchObject({ reference: first.reference, replayed: true });
    expect(fake.calls).toBe(callsBefore);
  });

  it('retries with the same key after a crash between the call and recording its result; the provider applies once', async () => {
    // Prepare
    const key = `notify:${randomUUID()}`;
    const appliedBefore = fake.applied;
    const doomedSql = db.client({ max: 1 });
    const sendThenDie: typeof provider.send = async (req, idempotencyKey) => {
      const answer = await provider.send(req, idempotencyKey);
      await doomedSql.end(); // the process loses its database before it can record the answer
      return answer;
    };

    // Act
    const crashed = notify(key, { sql: doomedSql, send: sendThenDie });
    await expect(crashed).rejects.toMatchObject({ code: 'CONNECTION_ENDED' });
    const afterCrash = await logRow(key);
    const retry = await notify(key);

    // Assess
    expect(afterCrash).toMatchObject({ status: 'PENDING', provider_reference: null, attempts: 1 });
    expect(fake.keys.slice(-2)).toEqual([key, key]);
    expect(fake.applied).toBe(appliedBefore + 1);
    expect(retry).toMatchObject({ replayed: false, attempts: 2 });
    expect(await logRow(key)).toMatchObject({
      status: 'COMPLETED',
      provider_reference: retry.reference,
      attempts: 2,
    });
  });

  it('treats a lost answer as an unknown outcome: retryable, recorded, retried with the same key', async () => {
    // Prepare
    const key = `notify:${randomUUID()}`;
    const appliedBefore = fake.applied;
    fake.dropNextAnswer(); // the provider applies the notification, then the connection drops

    // Act
    const lost = notify(key);
    await expect(lost).rejects.toBeInstanceOf(RetryableError);
    await expect(lost).rejects.toMatchObject({ code: 'EFFECT_OUTCOME_UNKNOWN' });
    const afterLoss = await logRow(key);
    const retry = await notify(key);

    // Assess
    expect(fake.applied).toBe(appliedBefore + 1);
    expect(afterLoss).toMatchObject({ status: 'PENDING', attempts: 1 });
    expect(afterLoss?.last_error).toContain('EFFECT_OUTCOME_UNKNOWN');
    expect(afterLoss?.last_error).not.toContain(request.recipient);
    expect(fake.keys.slice(-2)).toEqual([key, key]);
    expect(retry).toMatchObject({ replayed: false, attempts: 2 });
    expect(await logRow(key)).toMatchObject({
      status: 'COMPLETED',
      provider_reference: retry.reference,
      last_error: null,
    });
  });

  it('rejects a different request under the same key as terminal EFFECT_HASH_MISMATCH, without calling', async () => {
    // Prepare
    const key = `notify:${randomUUID()}`;
    await notify(key);
    const callsBefore = fake.calls;

    // Act
    const attempt = notify(key, { req: { ...request, recipient: 'someone-else@example.com' } });

    // Assess
    await expect(attempt).rejects.toBeInstanceOf(TerminalError);
    await expect(attempt).rejects.toMatchObject({ code: 'EFFECT_HASH_MISMATCH' });
    await expect(attempt).rejects.not.toThrow(/someone-else/);
    expect(fake.calls).toBe(callsBefore);
  });

  it('records a provider rejection as FAILED_TERMINAL and never calls again for that key', async () => {
    // Prepare
    const key = `notify:${randomUUID()}`;
    fake.failNext(400);

    // Act
    const rejected = notify(key);
    await expect(rejected).rejects.toMatchObject({ code: 'EFFECT_REJECTED' });
    const callsBefore = fake.calls;
    const again = notify(key);

    // Assess
    await expect(again).rejects.toMatchObject({ code: 'EFFECT_FAILED_TERMINAL' });
    expect(fake.calls).toBe(callsBefore);
    expect(await logRow(key)).toMatchObject({ status: 'FAILED_TERMINAL' });
    expect((await logRow(key))?.last_error).toContain('rejected the notification with 400');
  });

  it('keeps the row PENDING when the provider is unavailable, and completes on the next attempt', async () => {
    // Prepare
    const key = `notify:${randomUUID()}`;
    fake.failNext(503);

    // Act
    const unavailable = notify(key);
    await expect(unavailable).rejects.toMatchObject({ code: 'EFFECT_PROVIDER_UNAVAILABLE' });
    const result = await notify(key);

    // Assess
    expect(result.attempts).toBe(2);
    expect(await logRow(key)).toMatchObject({ status: 'COMPLETED', attempts: 2 });
  });

  it('refuses to run inside a transaction, whose PENDING row would not commit before the call', async () => {
    // Prepare
    const key = `notify:${randomUUID()}`;
    const callsBefore = fake.calls;

    // Act
    const attempt = db.sql.begin((sql) =>
      // biome-ignore lint/suspicious/noExplicitAny: passing the wrong client on purpose
      notify(key, { sql: sql as any }),
    );

    // Assess
    await expect(attempt).rejects.toMatchObject({ code: 'EFFECT_LOG_IN_TRANSACTION' });
    expect(fake.calls).toBe(callsBefore);
    expect(await logRow(key)).toBeUndefined();
  });

  it('refuses a request nested 5,000 levels as terminal EFFECT_INVALID naming the bound, without a row or a call', async () => {
    // Prepare
    const key = `notify:${randomUUID()}`;
    const callsBefore = fake.calls;
    const deep = { ...request, thread: nestedArrays(5_000) } as typeof request;

    // Act
    const attempt = notify(key, { req: deep });

    // Assess
    await expect(attempt).rejects.toBeInstanceOf(TerminalError);
    await expect(attempt).rejects.toMatchObject({
      code: 'EFFECT_INVALID',
      message: `External effect ${key}: its request nests more than ${MAX_PAYLOAD_DEPTH} levels of objects and arrays (the bound of a payload, docs/semantics.md); send a flatter request`,
    });
    expect(fake.calls).toBe(callsBefore);
    expect(await logRow(key)).toBeUndefined();
  });
});
