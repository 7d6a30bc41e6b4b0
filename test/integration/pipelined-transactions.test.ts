import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { SQSRecord } from 'aws-lambda';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { ROUND_TRIP_OPTIONS } from '../../lambda/postgres/round-trip-options.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import { caseIds, deadlineRecords } from '../../tools/bench/bench-messages.ts';
import type { RoundTripProxy } from '../../tools/bench/round-trip-proxy.ts';
import { lambdaContext } from '../../tools/local/lambda-context.ts';
import { countingProxy } from '../support/counting-proxy.ts';
import { createTestDatabase } from '../support/database.ts';
import { waitFor } from '../support/wait-for.ts';

const db = await createTestDatabase();
const APPLICATION_NAME = 'pipelined-test';
let proxy: RoundTripProxy;
let proxiedUrl: string;

/** Whatever escapes every caller in this process (Node would exit on it). */
const escaped: unknown[] = [];
const onEscaped = (error: unknown) => escaped.push(error);
beforeAll(async () => {
  process.on('uncaughtException', onEscaped);
  process.on('unhandledRejection', onEscaped);
  await db.sql`create table pipelined_rows (id text primary key, doc jsonb, tags text[], at timestamptz)`;
  ({ proxy, url: proxiedUrl } = await countingProxy(db.url));
});
afterAll(async () => {
  process.off('uncaughtException', onEscaped);
  process.off('unhandledRejection', onEscaped);
  await proxy.close();
});

/** A one-connection client as the worker's (`prepare: false`), through the counting proxy; with the worker's options unless `plain`. */
function client(options: { plain?: boolean } = {}): postgres.Sql {
  const sql = postgres(proxiedUrl, {
    ...(options.plain ? {} : (ROUND_TRIP_OPTIONS as object)),
    max: 1,
    prepare: false,
    onnotice: () => {},
    connection: { application_name: APPLICATION_NAME },
  });
  onTestFinished(() => sql.end({ timeout: 0 }));
  return sql;
}

/** Round trips and statements on the wire while `run` runs (the client connected before). */
async function counted(run: () => Promise<unknown>) {
  const before = await proxy.counts();
  await run();
  const after = await proxy.counts();
  return {
    roundTrips: after.roundTrips - before.roundTrips,
    statements: after.statements - before.statements,
  };
}

/** Waits until the test client's backend waits on a lock, then terminates it (a connection lost mid-statement). */
async function terminateOnceWaiting(what: string) {
  await waitFor(
    what,
    async () =>
      (
        await db.sql`
          select 1 from pg_stat_activity
          where application_name = ${APPLICATION_NAME} and wait_event_type = 'Lock'
        `
      ).length === 1,
    10_000,
  );
  await db.sql`
    select pg_terminate_backend(pid) from pg_stat_activity
    where datname = current_database() and application_name = ${APPLICATION_NAME}
  `;
}

const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'ok',
    (error: { code?: string }) => error.code ?? String(error),
  );

const rowsWith = async (prefix: string) =>
  (
    await db.sql<{ id: string }[]>`select id from pipelined_rows where id like ${`${prefix}%`} order by id`
  ).map((row) => row.id);

describe('postgres.js as patched: cast_types (no describe round trip for statements whose parameters are typed)', () => {
  it('a statement whose every parameter is cast to a built-in type is one round trip, with the values a described one stores', async () => {
    // Prepare
    const fast = client();
    const plain = client({ plain: true });
    await fast`select 1`;
    await plain`select 1`;
    const insert = (sql: postgres.Sql, id: string) =>
      sql`
        insert into pipelined_rows (id, doc, tags, at)
        values (${id}::text, ${sql.json({ a: [1, 'x'] })}, ${['p', 'q,r']}::text[], ${new Date('2026-01-02T03:04:05Z')})
      `;

    // Act
    const typed = await counted(() => insert(fast, 'cast-fast'));
    const described = await counted(() => insert(plain, 'cast-plain'));

    // Assess: one round trip instead of two, and the same row.
    expect(typed.roundTrips).toBe(1);
    expect(described.roundTrips).toBe(2);
    const rows = await db.sql`select doc, tags, at from pipelined_rows where id like 'cast-%' order by id`;
    expect(rows).toHaveLength(2);
    expect(rows[0]).toEqual(rows[1]);
  });

  it.each([
    ['a parameter without a cast', (sql: postgres.Sql) => sql`select ${'a'}::text || ${'b'} as v`],
    [
      'a parameter cast once and used once bare',
      (sql: postgres.Sql) => sql.unsafe('select $1::text || $1 as v', ['a']),
    ],
    ['a multi-word type', (sql: postgres.Sql) => sql`select ${'2026-01-02'}::timestamp with time zone as v`],
    ['a type modifier', (sql: postgres.Sql) => sql`select ${'abc'}::varchar(2) as v`],
    ['a qualified name', (sql: postgres.Sql) => sql`select ${'a'}::pg_catalog.text as v`],
  ])('a statement with %s is described first, as without the option', async (_, statement) => {
    // Prepare
    const fast = client();
    await fast`select 1`;

    // Act
    const seen = await counted(() => statement(fast));

    // Assess
    expect(seen.roundTrips).toBe(2);
  });
});

describe('postgres.js as patched: pipeline_begin (BEGIN goes out with the first statement, in its Sync)', () => {
  it('a transaction of one statement is two round trips: BEGIN with the statement, COMMIT', async () => {
    // Prepare
    const sql = client();
    await sql`select 1`;

    // Act
    const seen = await counted(() =>
      sql.begin((tx) => tx`insert into pipelined_rows (id) values (${'rt-1'}::text)`),
    );

    // Assess: BEGIN, the insert and COMMIT are three statements on the wire.
    expect(seen).toEqual({ roundTrips: 2, statements: 3 });
    expect(await rowsWith('rt-')).toEqual(['rt-1']);
  });

  it('a transaction on the first connection of a client with fetch_types off gets its connection', async () => {
    // Prepare: no catalog query on connect, so the connection opened for the transaction is handed to it at once.
    const sql = postgres(proxiedUrl, { ...(ROUND_TRIP_OPTIONS as object), max: 1, fetch_types: false });
    onTestFinished(() => sql.end({ timeout: 0 }));

    // Act
    const result = await sql.begin((tx) => tx`select ${'ok'}::text as v`);

    // Assess
    expect(result).toEqual([{ v: 'ok' }]);
  });

  it('a BEGIN that fails skips its statement (it never runs outside a transaction), fails the transaction with its error and sends nothing more', async () => {
    // Prepare: an isolation level the server refuses makes BEGIN itself fail.
    const sql = client();
    await sql`select 1`;
    const escapedBefore = escaped.length;
    let second = 'not run';

    // Act: a second statement is issued before the first is answered.
    const seen = await counted(async () => {
      const result = await codeOf(
        sql.begin('isolation level bogus', (tx) => {
          const first = tx`insert into pipelined_rows (id) values (${'begin-fail-1'}::text)`.execute();
          const next = codeOf(
            tx`insert into pipelined_rows (id) values (${'begin-fail-2'}::text)`.execute(),
          ).then((code) => {
            second = code;
          });
          return Promise.all([first, next]);
        }),
      );
      expect(result).toBe('42601');
    });

    // Assess: no row, the queued statement failed with BEGIN's error and was never sent (no ROLLBACK either: one
    // round trip, two statements: BEGIN and the first insert), and the client goes on.
    await waitFor('the second statement settled', () => second !== 'not run', 5000);
    expect(second).toBe('42601');
    expect(await rowsWith('begin-fail-')).toEqual([]);
    expect(seen).toEqual({ roundTrips: 1, statements: 2 });
    expect(
      await codeOf(sql.begin((tx) => tx`insert into pipelined_rows (id) values (${'begin-after'}::text)`)),
    ).toBe('ok');
    expect(await rowsWith('begin-after')).toEqual(['begin-after']);
    expect(escaped.slice(escapedBefore)).toEqual([]);
  });

  it('a failure of the statement sent with BEGIN rolls the transaction back and is reported', async () => {
    // Prepare: the second insert of the transaction conflicts with the first.
    const sql = client();
    await db.sql`insert into pipelined_rows (id) values ('dup-1')`;

    // Act
    const result = await codeOf(
      sql.begin(async (tx) => {
        await tx`insert into pipelined_rows (id) values (${'dup-1'}::text)`;
        await tx`insert into pipelined_rows (id) values (${'dup-2'}::text)`;
      }),
    );

    // Assess: reported as the unique violation, nothing written, the connection usable.
    expect(result).toBe('23505');
    expect(await rowsWith('dup-')).toEqual(['dup-1']);
    expect(await sql`select 1 as one`).toEqual([{ one: 1 }]);
  });

  it('a COMMIT pipelined behind a statement that fails answers ROLLBACK: the transaction fails with that error, nothing committed', async () => {
    // Prepare: the callback returns without awaiting its second statement, which conflicts.
    const sql = client();
    await db.sql`insert into pipelined_rows (id) values ('commit-dup')`;

    // Act
    const result = await codeOf(
      sql.begin(async (tx) => {
        await tx`insert into pipelined_rows (id) values (${'commit-1'}::text)`;
        tx`insert into pipelined_rows (id) values (${'commit-dup'}::text)`.execute();
      }),
    );

    // Assess: reported as the unique violation, never as committed; the first insert rolled back with it.
    expect(result).toBe('23505');
    expect(await rowsWith('commit-')).toEqual(['commit-dup']);
    expect(await sql`select 1 as one`).toEqual([{ one: 1 }]);
  });

  it('a connection lost while BEGIN and its statement are in flight fails the transaction and writes nothing', async () => {
    // Prepare: the statement waits on a lock held by another session.
    const sql = client();
    await sql`select 1`;
    const holder = await db.sql.reserve();
    onTestFinished(() => holder.release());
    await holder`begin`;
    await holder`lock table pipelined_rows in access exclusive mode`;
    const escapedBefore = escaped.length;

    // Act
    const transaction = codeOf(
      sql.begin((tx) => tx`insert into pipelined_rows (id) values (${'lost-1'}::text)`),
    );
    await terminateOnceWaiting('the insert waiting on the lock');
    const result = await transaction;
    await holder`rollback`;

    // Assess
    expect(result).toBe('CONNECTION_CLOSED');
    expect(await rowsWith('lost-')).toEqual([]);
    expect(await sql`select 1 as one`).toEqual([{ one: 1 }]);
    expect(escaped.slice(escapedBefore)).toEqual([]);
  });
});

describe('The worker on a client with the round-trip options', () => {
  const worker = (sql: postgres.Sql, commitMode: 'per-message' | 'per-batch') =>
    createWorker({
      consumer: 'pipelined-worker',
      handlers: exampleHandlers,
      sql,
      logger: new Logger({ logLevel: 'SILENT' }),
      metrics: new Metrics({ namespace: 'Pipelined' }),
      commitMode,
    });
  const invoke = (handler: ReturnType<typeof worker>, records: SQSRecord[]) =>
    handler({ Records: records }, lambdaContext({ functionName: 'pipelined-test', timeoutMs: 30_000 }));
  const seed = (prefix: string, count: number) =>
    db.sql`insert into cases (case_id, stage, version) select id, 'INVESTIGATION', 1 from unnest(${caseIds(prefix, count)}::text[]) as id`;
  const state = async (prefix: string) => ({
    inbox: (
      await db.sql`select status from worker_inbox where idempotency_key like ${`case:${prefix}-%`} order by idempotency_key`
    ).map((row) => row.status as string),
    deadlines: (await db.sql`select 1 from case_deadlines where case_id like ${`${prefix}-%`}`).length,
  });

  it.each([
    ['per-message', 3],
    ['per-batch', 1.2],
  ] as const)('%s: %d round trips per message', async (mode, perMessage) => {
    // Prepare
    const prefix = `worker-rt-${mode}`;
    await seed(prefix, 20);
    const records = deadlineRecords(prefix, 20);
    const [warmup, counted10] = [records.slice(0, 10), records.slice(10)];
    const handler = worker(client(), mode);
    await invoke(handler, warmup);

    // Act
    const seen = await counted(() => invoke(handler, counted10));

    // Assess
    expect(seen.roundTrips / 10).toBeCloseTo(perMessage, 5);
    expect((await state(prefix)).inbox).toEqual(Array(20).fill('COMPLETED'));
  });

  it('per-message: a connection lost while the BEGIN and claim are in flight loses nothing; the redelivery completes once', async () => {
    // Prepare: the claim waits on a lock of the inbox table held by another session.
    const prefix = 'worker-lost';
    await seed(prefix, 1);
    const records = deadlineRecords(prefix, 1);
    const sql = client();
    await sql`select 1`;
    const handler = worker(sql, 'per-message');
    const holder = await db.sql.reserve();
    onTestFinished(() => holder.release());
    await holder`begin`;
    await holder`lock table worker_inbox in access exclusive mode`;

    // Act
    const response = invoke(handler, records).then(
      () => 'completed',
      (error: Error) => error.message,
    );
    await terminateOnceWaiting('the claim waiting on the lock');
    const first = await response;
    await holder`rollback`;
    const afterLoss = await state(prefix);
    const second = await invoke(handler, records);

    // Assess: the invocation failed (every record lost its database: Lambda retries it) with nothing written; the
    // redelivery applied it once.
    expect(first).toContain('DATABASE_UNAVAILABLE');
    expect(afterLoss).toEqual({ inbox: [], deadlines: 0 });
    expect(second.batchItemFailures).toEqual([]);
    expect(await state(prefix)).toEqual({ inbox: ['COMPLETED'], deadlines: 1 });
  });
});
