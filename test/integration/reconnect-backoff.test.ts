import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { DatabaseConnectError } from '../../lambda/errors.ts';
import { createSql } from '../../lambda/postgres/db.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';
import { startTlsTerminatingProxy } from '../support/tls-terminating-proxy.ts';

const db = await createTestDatabase();

/** Time the server turns connections away in each test. */
const DOWN_MS = 1500;

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

/** A proxy in front of the test database, and the database's URL through it. */
async function proxied(): Promise<{ proxy: TcpProxy; url: string }> {
  const target = new URL(db.url);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
  cleanups.push(() => proxy.close());
  const url = new URL(db.url);
  url.port = String(proxy.port);
  return { proxy, url: url.toString() };
}

/**
 * The failover sequence: the pooled connection is cut while a query is on it, then every new connection is turned
 * away for {@link DOWN_MS} while the next query waits — closed at once without a word (`refuse`: nothing listening
 * behind a load balancer), or answered with FATAL 57P03 (`down`: PostgreSQL starting up) — then it is back. Returns
 * the connection attempts made while it was down, how the waiting query ended, and the rows of a query sent after
 * it.
 */
async function failover(sql: postgres.Sql, proxy: TcpProxy, turnAway: 'refuse' | 'down' = 'refuse') {
  const code = (error: { code?: string }) => error.code;
  await sql`select 1`;
  if (turnAway === 'refuse') proxy.refuse();
  else proxy.down();
  // Sent in the same tick as the cut, so the connection still carries it when it closes.
  const cut = await sql`select 1`.then(() => 'completed', code);
  proxy.resetCount();
  const waiting = sql`select 1 as ok`.then(() => 'completed', code);
  await new Promise((resolve) => setTimeout(resolve, DOWN_MS));
  const attemptsWhileDown = proxy.connections;
  proxy.up();
  const waited = await waiting;
  return { cut, attemptsWhileDown, waited, after: await sql<{ ok: number }[]>`select 1 as ok` };
}

describe('Function: createSql — connection attempts while the server turns connections away', () => {
  it('retries a few times a second, not hundreds, and works again once the server is back', async () => {
    const { proxy, url } = await proxied();
    const sql = createSql({ kind: 'url', url, poolSize: 1 });
    cleanups.push(() => sql.end({ timeout: 0 }));

    const { cut, attemptsWhileDown, waited, after } = await failover(sql, proxy);

    expect(cut).toBe('CONNECTION_CLOSED');
    // Waits of 50, 100, 200, 400 and 800 ms (±25 %) after the first quick failure: 5 or 6 attempts in 1.5 s.
    expect(attemptsWhileDown).toBeGreaterThanOrEqual(3);
    expect(attemptsWhileDown).toBeLessThanOrEqual(8);
    // The waiting query runs on the first connection that opens; the pool then works again.
    expect(waited).toBe('completed');
    expect(after).toEqual([{ ok: 1 }]);
  });

  it('fails the waiting query at its first attempt when the server answers it with FATAL 57P03, and works once it is back', async () => {
    const { proxy, url } = await proxied();
    const sql = createSql({ kind: 'url', url, poolSize: 1 });
    cleanups.push(() => sql.end({ timeout: 0 }));

    const { cut, attemptsWhileDown, waited, after } = await failover(sql, proxy, 'down');

    // postgres.js rejects a query whose connection is refused with the server's error: one attempt, the record is
    // retried as CANNOT_CONNECT_NOW. (3.4.9 unpatched kept the cut query as its active one, stored the refusal for
    // it and reconnected in a tight loop until the server was back, then handed the waiting query the old 57P03.)
    expect(cut).toBe('CONNECTION_CLOSED');
    expect(attemptsWhileDown).toBe(1);
    expect(waited).toBe('57P03');
    expect(after).toEqual([{ ok: 1 }]);
  });

  it('fails the waiting query after 8 attempts when the server stays down, and works once it is back', async () => {
    // Prepare
    const { proxy, url } = await proxied();
    const sql = createSql({ kind: 'url', url, poolSize: 1 });
    cleanups.push(() => sql.end({ timeout: 0 }));
    await sql`select 1`;
    proxy.refuse();
    await sql`select 1`.catch(() => {}); // cut mid-query
    proxy.resetCount();

    // Act: every connection is closed at once for longer than the attempts take (~5 s).
    const started = Date.now();
    const waited = await sql`select 1`.then(
      () => undefined,
      (error: unknown) => error,
    );
    const elapsedMs = Date.now() - started;
    const attempts = proxy.connections;
    proxy.up();
    const after = await sql<{ ok: number }[]>`select 1 as ok`;

    // Assess
    expect(waited).toBeInstanceOf(DatabaseConnectError);
    expect(waited).toMatchObject({ code: 'CONNECTION_CLOSED', address: `127.0.0.1:${proxy.port}` });
    // 8 in a row at most (one may have been made before the count was reset, right after the cut).
    expect(attempts).toBeGreaterThanOrEqual(6);
    expect(attempts).toBeLessThanOrEqual(8);
    expect(elapsedMs).toBeLessThan(8000);
    expect(after).toEqual([{ ok: 1 }]);
  });

  it('(the problem it solves) a bare postgres.js client reconnects without pause for as long as the query waits', async () => {
    const { proxy, url } = await proxied();
    const sql = postgres(url, { max: 1, prepare: false, onnotice: () => {} });
    cleanups.push(() => sql.end({ timeout: 0 }));

    const { cut, attemptsWhileDown, waited, after } = await failover(sql, proxy);

    // If postgres.js ever waits between these attempts itself, this fails: `reconnectBackoff` may then go.
    expect(cut).toBe('CONNECTION_CLOSED');
    expect(attemptsWhileDown).toBeGreaterThan(50);
    expect(waited).toBe('completed');
    expect(after).toEqual([{ ok: 1 }]);
  });
});

describe('Function: createSql — TLS over the sockets it opens', () => {
  it('negotiates TLS the way RDS Proxy requires it (SSLRequest, then a handshake) and runs queries', async () => {
    // Prepare: a proxy that demands TLS in front of the test database (plain TCP behind it).
    const target = new URL(db.url);
    const proxy = await startTlsTerminatingProxy({ host: target.hostname, port: Number(target.port) });
    cleanups.push(() => proxy.close());
    const sql = createSql({
      kind: 'host',
      host: '127.0.0.1',
      port: proxy.port,
      database: db.name,
      user: decodeURIComponent(target.username),
      auth: 'password',
      password: decodeURIComponent(target.password),
      region: 'eu-west-1',
      ssl: true,
      // The certificate is verified: trust the CA the proxy made for this run.
      ca: proxy.caCertificate,
      poolSize: 1,
    });
    cleanups.push(() => sql.end({ timeout: 0 }));

    // Act
    const rows = await sql<{ database: string }[]>`select current_database() as database`;

    // Assess: one connection, encrypted, and the query answered by the test database behind the proxy.
    expect(proxy.handshakes).toEqual(['TLSv1.3']);
    expect(rows).toEqual([{ database: db.name }]);
  });
});
