import { connect, type Socket } from 'node:net';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createTestDatabase } from '../support/database.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import { waitFor } from '../support/wait-for.ts';

const db = await createTestDatabase();
const APPLICATION_NAME = 'patch-test';

/** Whatever escapes every caller in this process (Node would exit on it). */
const escaped: unknown[] = [];
const onEscaped = (error: unknown) => escaped.push(error);
beforeAll(async () => {
  process.on('uncaughtException', onEscaped);
  process.on('unhandledRejection', onEscaped);
  await db.sql`create table patch_rows (id text primary key)`;
});
afterAll(() => {
  process.off('uncaughtException', onEscaped);
  process.off('unhandledRejection', onEscaped);
});

/** A one-connection client (as a Lambda environment's), optionally through a TCP proxy; counts its closes. */
async function client(options: { viaProxy?: boolean } = {}) {
  const proxy = await startTcpProxy({ host: new URL(db.url).hostname, port: Number(new URL(db.url).port) });
  const url = new URL(db.url);
  if (options.viaProxy) url.port = String(proxy.port);
  let closes = 0;
  const sql = postgres(url.toString(), {
    max: 1,
    prepare: false,
    connect_timeout: 2,
    onnotice: () => {},
    onclose: () => {
      closes += 1;
    },
    connection: { application_name: APPLICATION_NAME },
  });
  onTestFinished(async () => {
    await sql.end({ timeout: 0 });
    await proxy.close();
  });
  return { sql, proxy, closes: () => closes };
}

const terminate = () =>
  db.sql`
    select pg_terminate_backend(pid) from pg_stat_activity
    where datname = current_database() and application_name = ${APPLICATION_NAME}
  `;

/** Settles `promise` into what it did, or `pending` after `ms` (a query that never answers). */
const outcome = (promise: Promise<unknown>, ms = 3000) =>
  Promise.race([
    promise.then(
      () => 'ok',
      (error: { code?: string }) => error.code ?? String(error),
    ),
    new Promise((resolve) => setTimeout(resolve, ms, 'pending')),
  ]);

/** Two turns of the event loop: a write postgres.js deferred to the next one has run. */
const turns = async () => {
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
};

describe('postgres.js 3.4.9 as patched (patches/postgres+3.4.9.patch), plain sql.begin', () => {
  it('a transaction whose backend is terminated in a statement rejects CONNECTION_CLOSED, its ROLLBACK is not written, and the next query answers at once', async () => {
    // Prepare
    const { sql } = await client();
    let running!: () => void;
    const started = new Promise<void>((resolve) => {
      running = resolve;
    });
    const escapedBefore = escaped.length;

    // Act
    const transaction = sql.begin(async (tx) => {
      const sleep = tx`select pg_sleep(10)`.execute();
      running();
      await sleep;
    });
    // Handled from the start: the close may reject it before the test awaits it (a busy machine), which Node
    // would report as an unhandled rejection of the test's own making.
    const settled = transaction.then(
      () => 'ok',
      (error: { code?: string }) => error.code ?? String(error),
    );
    await started;
    await waitFor(
      'the statement running',
      async () =>
        (
          await db.sql`
            select 1 from pg_stat_activity
            where application_name = ${APPLICATION_NAME} and state = 'active' and query like 'select pg_sleep%'
          `
        ).length === 1,
      10_000,
    );
    await terminate();
    const result = await Promise.race([settled, outcome(new Promise(() => {}))]);
    await turns();

    // Assess: the first query after the kill neither hangs nor gets the old backend's FATAL 57P01
    expect(result).toBe('CONNECTION_CLOSED');
    expect(escaped.slice(escapedBefore)).toEqual([]);
    expect(await outcome(sql`select 1`)).toBe('ok');
  });

  it("a transaction's statement after its connection closed is refused (CONNECTION_CLOSED), never sent on the pool's new connection", async () => {
    // Prepare: the callback waits outside the database; meanwhile another transaction gets the reconnected connection
    const { sql, closes } = await client();
    let holding!: () => void;
    const held = new Promise<void>((resolve) => {
      holding = resolve;
    });
    let resume!: () => void;
    const resumed = new Promise<void>((resolve) => {
      resume = resolve;
    });
    let late = 'not run';
    const escapedBefore = escaped.length;
    const stale = sql.begin(async (tx) => {
      await tx`insert into patch_rows (id) values ('stale-1')`;
      holding();
      await resumed;
      try {
        await tx`insert into patch_rows (id) values ('stale-2')`;
        late = 'ok';
      } catch (error) {
        late = (error as { code?: string }).code ?? String(error);
      }
    });
    const staleSettled = outcome(stale, 10_000);
    await held;

    // Act: kill its backend, let another transaction start on the reconnected connection, then wake the first one
    await terminate();
    await waitFor('the close seen', () => closes() === 1, 10_000);
    const staleResult = await staleSettled;
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let otherOpen!: () => void;
    const otherOpened = new Promise<void>((resolve) => {
      otherOpen = resolve;
    });
    const other = sql.begin(async (tx) => {
      await tx`insert into patch_rows (id) values ('other-1')`;
      otherOpen();
      await released;
      await tx`insert into patch_rows (id) values ('other-2')`;
    });
    await otherOpened;
    resume();
    await waitFor('the stale statement settled', () => late !== 'not run', 5_000);
    release();
    const otherResult = await outcome(other);
    await turns();

    // Assess: the stale callback reached nothing; the other transaction committed whole
    expect(staleResult).toBe('CONNECTION_CLOSED');
    expect(late).toBe('CONNECTION_CLOSED');
    expect(otherResult).toBe('ok');
    expect((await db.sql`select id from patch_rows order by id`).map((row) => row.id)).toEqual([
      'other-1',
      'other-2',
    ]);
    expect(escaped.slice(escapedBefore)).toEqual([]);
    await db.sql`delete from patch_rows`;
  });

  it('after a connection reset by the network in a transaction, every later query of the pool answers', async () => {
    // Prepare
    const { sql, proxy } = await client({ viaProxy: true });
    await sql`select 1`;
    const escapedBefore = escaped.length;

    // Act: an RST while the transaction's statement runs, then three queries in a row
    const transaction = sql.begin(async (tx) => {
      await tx`select pg_sleep(10)`;
    });
    // Handled from the start: the close may reject it before the test awaits it (a busy machine), which Node
    // would report as an unhandled rejection of the test's own making.
    const settled = transaction.then(
      () => 'ok',
      (error: { code?: string }) => error.code ?? String(error),
    );
    await waitFor(
      'the statement running',
      async () =>
        (
          await db.sql`
            select 1 from pg_stat_activity
            where datname = current_database() and state = 'active' and query like 'select pg_sleep%'
          `
        ).length === 1,
      10_000,
    );
    proxy.reset();
    const result = await Promise.race([settled, outcome(new Promise(() => {}))]);
    const after = [];
    for (let i = 0; i < 3; i += 1) after.push(await outcome(sql`select ${i}::int`));
    await turns();

    // Assess
    expect(result).toMatch(/^(ECONNRESET|CONNECTION_CLOSED)$/);
    expect(after).toEqual(['ok', 'ok', 'ok']);
    expect(escaped.slice(escapedBefore)).toEqual([]);
  });
  it('a reserved connection whose backend was terminated rejects its next query instead of throwing from a timer', async () => {
    // Prepare
    const { sql, closes } = await client();
    const reserved = await sql.reserve();
    await reserved`select 1`;
    const escapedBefore = escaped.length;

    // Act: the backend is gone and the client has seen its connection close; the reserved handle is used twice more
    await terminate();
    await waitFor('the close seen', () => closes() === 1, 10_000);
    const first = await outcome(reserved`select 1`);
    const second = await outcome(reserved`select 1`);
    await turns();
    reserved.release();

    // Assess
    expect([first, second]).toEqual(['CONNECTION_CLOSED', 'CONNECTION_CLOSED']);
    expect(escaped.slice(escapedBefore)).toEqual([]);
  });

  it("queries waiting in a transaction's own queue settle when its connection closes", async () => {
    // Prepare: with prepare: false a statement with parameters is described first, so the ones after it wait in
    // the transaction's queue, not on the connection
    const { sql } = await client();
    const settled: unknown[] = [];
    const escapedBefore = escaped.length;
    const transaction = sql.begin((tx) =>
      [tx`select pg_sleep(${10})`, tx`select ${1}::int`, tx`select ${2}::int`].map((query) =>
        outcome(query, 5000).then((result) => settled.push(result)),
      ),
    );
    const transactionSettled = outcome(transaction, 5000);
    await waitFor(
      'the statement running',
      async () =>
        (
          await db.sql`
            select 1 from pg_stat_activity
            where application_name = ${APPLICATION_NAME} and state = 'active' and query like 'select pg_sleep%'
          `
        ).length === 1,
      10_000,
    );

    // Act
    await terminate();
    await transactionSettled;
    await waitFor('every query settled', () => settled.length === 3, 6_000);

    // Assess: all three rejected, none left pending
    expect(settled).toEqual(['CONNECTION_CLOSED', 'CONNECTION_CLOSED', 'CONNECTION_CLOSED']);
    expect(escaped.slice(escapedBefore)).toEqual([]);
  });

  it('a write left buffered when its socket closes is not sent ahead of the next connection, which opens', async () => {
    // Prepare: the client's sockets, so the test can close one while a write waits for the next turn
    const sockets: Socket[] = [];
    const target = new URL(db.url);
    const sql = postgres(db.url, {
      max: 1,
      prepare: false,
      connect_timeout: 2,
      onnotice: () => {},
      socket: () => {
        const socket = connect(Number(target.port), target.hostname);
        sockets.push(socket);
        return socket;
      },
    } as postgres.Options<Record<string, postgres.PostgresType>>);
    onTestFinished(() => sql.end({ timeout: 0 }));
    await sql`select 1`;

    // Act: inside a setImmediate callback a query's write is deferred to the next turn, and the socket is
    // destroyed: its close callback runs in this turn, before that write
    const pending = await new Promise<Promise<unknown>>((resolve) => {
      setImmediate(async () => {
        const query = outcome(sql`select 2`);
        await Promise.resolve();
        await Promise.resolve();
        sockets[0]?.destroy();
        resolve(query);
      });
    });
    const lost = await pending;
    const next = await outcome(sql`select 3`, 5000);

    // Assess: the lost query failed; the next one got a fresh connection instead of a CONNECT_TIMEOUT
    expect(lost).toBe('CONNECTION_CLOSED');
    expect(next).toBe('ok');
    expect(sockets.length).toBe(2);
  });
});
