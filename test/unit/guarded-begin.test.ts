import type postgres from 'postgres';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CONNECTION_LOSS_SETTLE_MS, guardedBegin } from '../../lambda/stores/postgres/guarded-begin.ts';

/**
 * A client whose `begin` runs the callback on `tx` and settles as the callback does (as postgres.js does when the
 * connection stays open: it never rejects on its own here).
 */
const clientWith = (tx: (...args: unknown[]) => Promise<unknown>) =>
  ({
    begin: (fn: (tx: unknown) => Promise<unknown>) => fn(tx),
  }) as unknown as postgres.Sql;

const connectionClosed = () =>
  Object.assign(new Error('write CONNECTION_CLOSED'), { code: 'CONNECTION_CLOSED' });

afterEach(() => {
  vi.useRealTimers();
});

describe('Function: guardedBegin()', () => {
  it('passes a callback outcome through when no connection error happened', async () => {
    // Prepare
    const sql = clientWith(async () => [{ ok: 1 }]);
    const failure = new Error('handler failed');

    // Act
    const value = await guardedBegin(sql, async (tx) => (await tx`select 1`)[0]);
    const rejected = await guardedBegin(sql, async () => {
      throw failure;
    }).catch((error: unknown) => error);

    // Assess
    expect(value).toEqual({ ok: 1 });
    expect(rejected).toBe(failure);
  });

  it('holds a callback that met a connection error while sql.begin has not settled, and lets it go after the settle time', async () => {
    // Prepare: a statement of the transaction fails as its connection closes; postgres.js's begin never rejects
    vi.useFakeTimers();
    const closed = connectionClosed();
    const sql = clientWith(() => Promise.reject(closed));
    let settled: unknown = 'pending';

    // Act
    const transaction = guardedBegin(sql, async (tx) => {
      await tx`select 1`;
    }).then(
      () => 'resolved',
      (error: unknown) => error,
    );
    void transaction.then((value) => {
      settled = value;
    });
    await vi.advanceTimersByTimeAsync(CONNECTION_LOSS_SETTLE_MS - 1);
    const whileHeld = settled;
    await vi.advanceTimersByTimeAsync(1);

    // Assess: nothing reached postgres.js (no outcome to roll back or commit) until the settle time was up
    expect(whileHeld).toBe('pending');
    expect(await transaction).toBe(closed);
  });
});
