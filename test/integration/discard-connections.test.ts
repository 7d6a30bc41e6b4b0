import postgres from 'postgres';
import { describe, expect, it, onTestFinished } from 'vitest';
import { connectOptions } from '../../lambda/postgres/connect-options.ts';
import { discardConnections } from '../../lambda/postgres/discard-connections.ts';
import { guardedBegin } from '../../lambda/stores/postgres/guarded-begin.ts';
import { createTestDatabase } from '../support/database.ts';
import { proxiedDatabase } from '../support/proxied-database.ts';
import { waitFor } from '../support/wait-for.ts';

const db = await createTestDatabase();

/** A client made as the worker's is (`connectOptions`), through a proxy the test can silence. */
async function silenceableClient(max: number) {
  const { proxy, url } = await proxiedDatabase(db.url);
  const sql = postgres(url, { ...connectOptions({ setting: 'DATABASE_URL' }), max, onnotice: () => {} });
  onTestFinished(async () => {
    await sql.end({ timeout: 0 }).catch(() => {});
    await proxy.close();
  });
  return { proxy, sql };
}

/** Resolves with what `promise` settled with, or 'pending' after `ms`. */
const settledWithin = (promise: Promise<unknown>, ms: number) =>
  Promise.race([
    promise.then(
      () => 'resolved',
      (error: { code?: string; name?: string }) => error.code ?? error.name,
    ),
    new Promise((resolve) => setTimeout(() => resolve('pending'), ms)),
  ]);

describe('Function: discardConnections()', () => {
  it('frees the connections a silent server holds, mid-transaction, and the pool works once it answers again', async () => {
    // Prepare: two transactions, each on its own connection, stuck on a statement the server never answers.
    const { proxy, sql } = await silenceableClient(2);
    const started: string[] = [];
    const late: string[] = [];
    const stuck = (name: string) =>
      guardedBegin(sql, async (tx) => {
        await tx`select 1`;
        started.push(name);
        if (started.length === 2) proxy.stall();
        await tx`select pg_sleep(0.05)`.catch(async () => {
          // A body that goes on after its connection is gone: its statement never reaches postgres.js.
          try {
            await tx`select 2`;
            late.push('sent');
          } catch (error) {
            late.push((error as { code?: string }).code ?? (error as Error).name);
          }
        });
        return name;
      });
    const first = stuck('first');
    const second = stuck('second');
    while (started.length < 2) await new Promise((resolve) => setTimeout(resolve, 10));
    const stillWaiting = await settledWithin(Promise.race([first, second]), 300);

    // Act
    const discarded = discardConnections(sql);
    const outcomes = await Promise.all([settledWithin(first, 2000), settledWithin(second, 2000)]);
    await waitFor('the bodies to try once more', () => late.length === 2, 2000);
    proxy.up();
    const [row] = await sql<{ n: number }[]>`select 3 as n`;

    // Assess: both transactions end as connection losses, nothing is written after, the pool reconnects.
    expect(stillWaiting).toBe('pending');
    expect(discarded).toBe(2);
    expect(outcomes).toEqual(['CONNECTION_CLOSED', 'CONNECTION_CLOSED']);
    // Refused by the guard, never sent: the code of the discard, not a database's answer.
    expect(late).toEqual(['CONNECTION_CLOSED', 'CONNECTION_CLOSED']);
    expect(row?.n).toBe(3);
  });

  it('discards nothing of a client made without connectOptions (its sockets are not tracked)', async () => {
    const sql = db.client({ max: 1 });
    await sql`select 1`;
    expect(discardConnections(sql)).toBe(0);
    expect((await sql<{ n: number }[]>`select 1 as n`)[0]?.n).toBe(1);
  });
});
