import { describe, expect, it } from 'vitest';
import { DatabaseConnectError } from '../../lambda/errors.ts';
import { createSql } from '../../lambda/postgres/db.ts';
import { type BrokenMode, SECRET_PASSWORD, startBrokenListener } from '../support/broken-listener.ts';

/** Runs `select 1` through createSql against a broken listener; returns how it ended and how long it took. */
async function queryBroken(mode: BrokenMode) {
  const listener = await startBrokenListener(mode);
  const sql = createSql({ kind: 'url', url: listener.url, poolSize: 1 });
  const started = Date.now();
  const error = await sql`select 1`.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  const elapsedMs = Date.now() - started;
  await sql.end({ timeout: 0 });
  return { listener, error, elapsedMs };
}

describe('Function: createSql — servers that are not PostgreSQL', () => {
  it('fails a query within the connect timeout when the listener accepts and never answers', async () => {
    // Act
    const { listener, error, elapsedMs } = await queryBroken('silent');

    // Assess: one connection, failed after 5 s with an error naming the variable and host:port, not the password.
    expect(error).toBeInstanceOf(DatabaseConnectError);
    expect(error).toMatchObject({
      code: 'CONNECT_TIMEOUT',
      setting: 'DATABASE_URL',
      address: `127.0.0.1:${listener.port}`,
    });
    expect((error as Error).message).toBe(
      `Cannot connect to PostgreSQL at 127.0.0.1:${listener.port} (DATABASE_URL): no answer within 5 s (connect timeout). Check that DATABASE_URL names a PostgreSQL server that is running and reachable from here.`,
    );
    expect((error as Error).message).not.toContain(SECRET_PASSWORD);
    expect(elapsedMs).toBeGreaterThanOrEqual(4900);
    expect(elapsedMs).toBeLessThan(8000);
    expect(listener.connections).toBe(1);
  });

  it('stops after 8 attempts when the listener closes every connection at once', async () => {
    // Act
    const { listener, error, elapsedMs } = await queryBroken('close');

    // Assess: postgres.js alone reconnects to this without end (hundreds of times a second).
    expect(error).toBeInstanceOf(DatabaseConnectError);
    expect(error).toMatchObject({ code: 'CONNECTION_CLOSED', setting: 'DATABASE_URL' });
    expect((error as Error).message).toContain(
      `Cannot connect to PostgreSQL at 127.0.0.1:${listener.port} (DATABASE_URL): 8 connection attempts in a row were closed or refused`,
    );
    expect(listener.connections).toBe(8);
    // Waits of 50 … 1600 ms (±25 %) between the attempts: about 3.9 s in all.
    expect(elapsedMs).toBeLessThan(8000);
  });

  it('stops after 8 attempts when an HTTP server answers, and gives a later query one attempt only', async () => {
    // Prepare
    const listener = await startBrokenListener('http');
    const sql = createSql({ kind: 'url', url: listener.url, poolSize: 1 }, { setting: '--database-url' });
    const failure = (caught: unknown) => caught as DatabaseConnectError;

    // Act
    const first = await sql`select 1`.then(() => undefined, failure);
    const afterFirst = listener.connections;
    const second = await sql`select 1`.then(() => undefined, failure);
    await sql.end({ timeout: 0 });

    // Assess
    expect(first).toMatchObject({
      name: 'DatabaseConnectError',
      code: 'CONNECTION_CLOSED',
      setting: '--database-url',
    });
    expect(afterFirst).toBe(8);
    expect(second).toMatchObject({ name: 'DatabaseConnectError', code: 'CONNECTION_CLOSED' });
    expect(listener.connections).toBe(9);
  });
});
