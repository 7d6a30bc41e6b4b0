import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { BatchFailedError } from '../../lambda/errors.ts';
import { defineHandler } from '../../lambda/stores/postgres/message-handler.ts';
import { createTestDatabase } from '../support/database.ts';
import { envelopeFactory, lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import { alwaysRetryable } from '../support/test-handlers.ts';
import { exampleWorker } from '../support/test-worker.ts';

const db = await createTestDatabase();

/** How long `WriteThenWait` waits after its write, by key: a slow HTTP call on the first delivery only. */
const waits = new Map<string, number>();
/** What the handler's statement after the wait ran into, by key (`ok` when it reached the database). */
const afterWait = new Map<string, string>();

/**
 * `WriteThenWait`: counts its effect, then waits (outside the database, like an HTTP call), then writes again.
 * The count must end at 1 per key whatever the timing; the second write must never land.
 */
const writeThenWait = defineHandler({
  messageType: 'WriteThenWait',
  schemaVersion: 1,
  payload: z.object({ key: z.string() }),
  async handle({ sql, payload }) {
    await sql`
      insert into effect_counter (key, applied) values (${payload.key}, 1)
      on conflict (key) do update set applied = effect_counter.applied + 1
    `;
    const wait = waits.get(payload.key) ?? 0;
    if (wait > 0) {
      await sleep(wait);
      try {
        await sql`update effect_counter set late_writes = late_writes + 1 where key = ${payload.key}`;
        afterWait.set(payload.key, 'ok');
      } catch (error) {
        afterWait.set(payload.key, (error as Error).name);
        throw error;
      }
    }
    return { resultRef: `effect_counter/${payload.key}` };
  },
});
/** Called by `WriteThenHang` between its write and its next statement (the test stalls the network there). */
let beforeHang: () => void = () => {};
/** `WriteThenHang`: counts its effect, then sends a statement the network never delivers. */
const writeThenHang = defineHandler({
  messageType: 'WriteThenHang',
  schemaVersion: 1,
  payload: z.object({ key: z.string() }),
  async handle({ sql, payload }) {
    await sql`insert into effect_counter (key, applied) values (${payload.key}, 1)`;
    beforeHang();
    await sql`select 1`;
    return { resultRef: `effect_counter/${payload.key}` };
  },
});
const handlers = [...exampleHandlers, writeThenWait, writeThenHang, alwaysRetryable];

const message = (key: string) =>
  envelopeFactory({ messageType: 'WriteThenWait', idempotencyKey: `wtw:${key}`, payload: { key } });
const counter = async (key: string) =>
  (await db.sql`select applied, late_writes from effect_counter where key = ${key}`)[0] ?? {
    applied: 0,
    late_writes: 0,
  };
const inboxRow = async (key: string) =>
  (
    await db.sql`select status, failure_code, receive_count from worker_inbox where idempotency_key = ${`wtw:${key}`}`
  )[0];

beforeAll(async () => {
  await db.sql`
    create table effect_counter (key text primary key, applied int not null, late_writes int not null default 0)
  `;
});

describe.each(['per-message', 'per-batch'] as const)('Handler timeout, commitMode %s', (commitMode) => {
  it('applies a message once when its handler outlives the time left, and refuses its late statements', async () => {
    // Prepare: a fast record, one whose handler writes then waits longer than the invocation has, a fast one
    const [fast1, slow, fast2] = [randomUUID(), randomUUID(), randomUUID()];
    waits.set(slow, 4_000);
    const records = [fast1, slow, fast2].map((key) => sqsRecordFactory(message(key)));
    const worker = exampleWorker(db.client({ max: 1 }), { commitMode, handlers, deadlineGuardMs: 300 });
    // Per batch: an environment whose batches already run with a savepoint per record (one failure does it)
    const failing = sqsRecordFactory(envelopeFactory({ messageType: 'AlwaysRetryable', payload: {} }));
    await worker(sqsEvent([failing]), lambdaContext()).catch(() => {});

    // Act: the invocation, then the slow handler wakes up
    const response = await worker(sqsEvent(records), lambdaContext(2_500));
    const reported = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
    await sleep(4_000);

    // Assess: the slow record is reported and nothing of it committed, now or when its handler woke up
    expect(reported.has(records[1]?.messageId)).toBe(true);
    expect(await counter(slow)).toEqual({ applied: 0, late_writes: 0 });
    expect(afterWait.get(slow)).toBe('TransactionClosedError');
    expect(await inboxRow(slow)).toMatchObject({
      status: 'FAILED_RETRYABLE',
      failure_code: 'HANDLER_TIMEOUT',
    });
    // Every other record: committed exactly when acknowledged
    for (const [index, key] of [fast1, fast2].entries()) {
      const acknowledged = !reported.has(records[index * 2]?.messageId);
      expect((await counter(key)).applied).toBe(acknowledged ? 1 : 0);
    }

    // Act: the redeliveries, with a fast dependency
    waits.delete(slow);
    const again = await worker(sqsEvent(records), lambdaContext(10_000));
    const slowAfterRedelivery = await inboxRow(slow);
    await worker(sqsEvent(records), lambdaContext(10_000));

    // Assess: each effect applied once in all; the timed-out delivery counted as an attempt
    expect(again.batchItemFailures).toEqual([]);
    expect(slowAfterRedelivery).toMatchObject({ status: 'COMPLETED', receive_count: 2 });
    for (const key of [fast1, slow, fast2])
      expect(await counter(key)).toEqual({ applied: 1, late_writes: 0 });
  });
});

describe('Handler timeout, per-batch in an environment whose batches run without savepoints', () => {
  it('rolls the attempt back, and nothing is applied twice or behind the engine', async () => {
    // Prepare
    const [fast1, slow, fast2] = [randomUUID(), randomUUID(), randomUUID()];
    waits.set(slow, 3_000);
    const records = [fast1, slow, fast2].map((key) => sqsRecordFactory(message(key)));
    const worker = exampleWorker(db.client({ max: 1 }), {
      commitMode: 'per-batch',
      handlers,
      deadlineGuardMs: 300,
    });

    // Act
    const result = await worker(sqsEvent(records), lambdaContext(2_500)).catch((error: unknown) => error);
    await sleep(3_000);

    // Assess: whatever was acknowledged is applied once; the rest is applied zero times and reported
    const reported =
      result instanceof BatchFailedError
        ? new Set(result.messageIds)
        : new Set(
            (result as { batchItemFailures: { itemIdentifier: string }[] }).batchItemFailures.map(
              (f) => f.itemIdentifier,
            ),
          );
    expect(reported.has(records[1]?.messageId)).toBe(true);
    expect(afterWait.get(slow)).toBe('TransactionClosedError');
    for (const [index, key] of [fast1, slow, fast2].entries()) {
      const acknowledged = !reported.has(records[index]?.messageId);
      expect(await counter(key)).toEqual({ applied: acknowledged ? 1 : 0, late_writes: 0 });
    }
  });
});

describe('Handler timeout, per-batch with a statement that never returns', () => {
  it('rolls the batch back instead of committing while a record has not settled', async () => {
    // Prepare: the worker's one connection goes through a proxy the handler stalls mid-transaction; every
    // statement the client sends is recorded
    const target = new URL(db.url);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
    const viaProxy = new URL(db.url);
    viaProxy.port = String(proxy.port);
    let sent: string[] = [];
    const sql = postgres(viaProxy.toString(), {
      max: 1,
      onnotice: () => {},
      debug: (_connection, query) => sent.push(query.replace(/\s+/g, ' ').trim().toLowerCase()),
    });
    const worker = exampleWorker(sql, { commitMode: 'per-batch', handlers, deadlineGuardMs: 300 });
    const failing = sqsRecordFactory(envelopeFactory({ messageType: 'AlwaysRetryable', payload: {} }));
    await worker(sqsEvent([failing]), lambdaContext()).catch(() => {}); // batches now run with savepoints
    const [fast, hung] = [randomUUID(), randomUUID()];
    const records = [
      sqsRecordFactory(message(fast)),
      sqsRecordFactory(
        envelopeFactory({
          messageType: 'WriteThenHang',
          idempotencyKey: `wth:${hung}`,
          payload: { key: hung },
        }),
      ),
    ];
    beforeHang = () => {
      sent = [];
      proxy.stall();
    };

    try {
      // Act
      const result = await worker(sqsEvent(records), lambdaContext(2_500)).catch((error: unknown) => error);

      // Assess: every record reported; after the stall the client rolled back and never sent a COMMIT
      expect(result).toBeInstanceOf(BatchFailedError);
      expect((result as BatchFailedError).messageIds).toEqual(records.map((record) => record.messageId));
      expect(sent).toContain('rollback');
      expect(sent).not.toContain('commit');
    } finally {
      beforeHang = () => {};
      await sql.end({ timeout: 0 }).catch(() => {});
      await proxy.close();
    }
    // Nothing of the batch is applied once the server has seen the connection go
    await sleep(200);
    expect(await counter(fast)).toEqual({ applied: 0, late_writes: 0 });
    expect(await counter(hung)).toEqual({ applied: 0, late_writes: 0 });
  });
});

describe('Handler timeout, per-message on a pool of one connection', () => {
  it('does not wedge the environment: the next invocation gets the connection at once', async () => {
    // Prepare
    const sql = db.client({ max: 1, connection: { application_name: 'wedge-check' } });
    const worker = exampleWorker(sql, { handlers, deadlineGuardMs: 300 });
    const slow = randomUUID();
    const next = randomUUID();
    waits.set(slow, 5_000);

    // Act: a slow invocation, then the next one while the slow handler still sleeps
    const first = await worker(sqsEvent([sqsRecordFactory(message(slow))]), lambdaContext(2_000)).catch(
      (error: unknown) => error,
    );
    const started = Date.now();
    const second = await worker(sqsEvent([sqsRecordFactory(message(next))]), lambdaContext(2_000));
    const secondMs = Date.now() - started;
    const idleInTransaction = await db.sql`
      select count(*)::int as n from pg_stat_activity
      where application_name = 'wedge-check' and state like 'idle in transaction%'
    `;

    // Assess: a handler timeout is a failed attempt of that message, not a database outage
    expect((first as Error).message).toContain('HANDLER_TIMEOUT');
    expect(await inboxRow(slow)).toMatchObject({
      status: 'FAILED_RETRYABLE',
      failure_code: 'HANDLER_TIMEOUT',
      receive_count: 1,
    });
    expect(second.batchItemFailures).toEqual([]);
    expect(secondMs).toBeLessThan(1_500);
    expect(idleInTransaction[0]?.n).toBe(0);
    expect(await counter(next)).toEqual({ applied: 1, late_writes: 0 });

    // Assess, once the slow handler woke up: it completed nothing behind the engine's back
    await sleep(4_500);
    expect(afterWait.get(slow)).toBe('TransactionClosedError');
    expect(await counter(slow)).toEqual({ applied: 0, late_writes: 0 });
    expect(await inboxRow(slow)).toMatchObject({ status: 'FAILED_RETRYABLE' });
  });
});
