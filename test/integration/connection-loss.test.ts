import { randomUUID } from 'node:crypto';
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { z } from 'zod';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { BatchFailedError } from '../../lambda/errors.ts';
import { defineHandler } from '../../lambda/stores/postgres/message-handler.ts';
import { OutcomeRecorder } from '../../tools/local/outcome-recorder.ts';
import { createTestDatabase } from '../support/database.ts';
import { unpatchedPostgres } from '../support/postgres-patch.ts';
import { envelopeFactory, lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import { alwaysRetryable } from '../support/test-handlers.ts';
import { exampleWorker } from '../support/test-worker.ts';
import { waitFor } from '../support/wait-for.ts';

const db = await createTestDatabase();
const unpatched = await unpatchedPostgres();
const APPLICATION_NAME = 'conn-loss-worker';

/** Whatever escapes every caller in this process: the Lambda runtime would die of it (Node exits on both). */
const escaped: unknown[] = [];
const onEscaped = (error: unknown) => escaped.push(error);
beforeAll(async () => {
  process.on('uncaughtException', onEscaped);
  process.on('unhandledRejection', onEscaped);
  await db.sql`create table conn_loss_effects (key text primary key, writes int not null)`;
});
afterAll(() => {
  process.off('uncaughtException', onEscaped);
  process.off('unhandledRejection', onEscaped);
});

/** Where the first delivery of a key stops for the test to cut its connection, by key. */
interface Gate {
  readonly phase: 'statement' | 'between';
  reached(): void;
  readonly opened: Promise<void>;
}
const gates = new Map<string, Gate>();
/** What the gated delivery's statements ran into after the cut (`ok`: they reached the database), by key. */
const afterCut = new Map<string, string>();

/**
 * `HoldThenWrite`: two writes in its transaction. On a gated first delivery it stops between them, either in a
 * statement the test cuts (`pg_sleep`) or outside the database until the test has cut the connection; its second
 * write is then the statement that reaches the closed connection. A key ends with `writes = 2` exactly when its
 * one committed delivery wrote both and nothing of another delivery landed.
 */
const holdThenWrite = defineHandler({
  messageType: 'HoldThenWrite',
  schemaVersion: 1,
  payload: z.object({ key: z.string() }),
  async handle({ sql, payload }) {
    await sql`
      insert into conn_loss_effects (key, writes) values (${payload.key}, 1)
      on conflict (key) do update set writes = conn_loss_effects.writes + 1
    `;
    const gate = gates.get(payload.key);
    if (gate) {
      gates.delete(payload.key);
      gate.reached();
      try {
        if (gate.phase === 'statement') await sql`select pg_sleep(10)`;
        else await gate.opened;
        await sql`update conn_loss_effects set writes = writes + 1 where key = ${payload.key}`;
        afterCut.set(payload.key, 'ok');
      } catch (error) {
        afterCut.set(payload.key, (error as { code?: string }).code ?? (error as Error).name);
        throw error;
      }
      return {};
    }
    await sql`update conn_loss_effects set writes = writes + 1 where key = ${payload.key}`;
    return {};
  },
});

const message = (key: string) =>
  envelopeFactory({ messageType: 'HoldThenWrite', idempotencyKey: `loss:${key}`, payload: { key } });

/** The message ids a worker invocation reported (all of them when it threw `BatchFailedError`). */
async function reportedBy(invocation: Promise<SQSBatchResponse>): Promise<Set<string>> {
  try {
    const response = await invocation;
    return new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
  } catch (error) {
    if (!(error instanceof BatchFailedError)) throw error;
    return new Set(error.messageIds);
  }
}

const writesOf = async (keys: readonly string[]) =>
  Object.fromEntries(
    (
      await db.sql<{ key: string; writes: number }[]>`
        select key, writes from conn_loss_effects where key in ${db.sql(keys)}
      `
    ).map((row) => [row.key, row.writes]),
  );

const drivers = [
  { driver: 'postgres.js as patched here', postgres, resets: true },
  // Unpatched, a connection reset by the network answers one more query and then none (fixed by the patch only)
  {
    driver: 'postgres.js unpatched (a project that installs this package)',
    postgres: unpatched,
    resets: false,
  },
] as const;
const modes = [
  { mode: 'per-message', commitMode: 'per-message', savepoints: false },
  { mode: 'per-batch', commitMode: 'per-batch', savepoints: false },
  { mode: 'per-batch with a savepoint per record', commitMode: 'per-batch', savepoints: true },
] as const;
const cuts = [
  { cut: 'the TCP proxy cuts it', via: 'proxy', phase: 'statement' },
  { cut: 'the TCP proxy cuts it', via: 'proxy', phase: 'between' },
  { cut: 'the network resets it', via: 'reset', phase: 'statement' },
  { cut: 'the network resets it', via: 'reset', phase: 'between' },
  { cut: 'pg_terminate_backend ends it', via: 'terminate', phase: 'statement' },
  { cut: 'pg_terminate_backend ends it', via: 'terminate', phase: 'between' },
] as const;

describe.each(drivers)('Connection lost mid-transaction, $driver', ({ postgres: driver, resets }) => {
  describe.each(modes)('commitMode $mode', ({ commitMode, savepoints }) => {
    it.each(cuts.filter((cut) => resets || cut.via !== 'reset'))(
      'the process survives when $cut ($phase): the record is retried, each key applied once',
      async ({ via, phase }) => {
        // Prepare: the worker's one connection, through a proxy the test can cut or as a session it can end
        const proxy = await startTcpProxy({
          host: new URL(db.url).hostname,
          port: Number(new URL(db.url).port),
        });
        const url = new URL(db.url);
        if (via !== 'terminate') url.port = String(proxy.port);
        let closes = 0;
        const sql = driver(url.toString(), {
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
        const recorder = new OutcomeRecorder();
        const worker = exampleWorker(sql, {
          commitMode,
          recordConcurrency: 1,
          handlers: [...exampleHandlers, holdThenWrite, alwaysRetryable],
          onOutcome: recorder.onOutcome,
        });
        if (savepoints) {
          // An environment whose batches already run with a savepoint per record (one failure does it)
          const failing = sqsRecordFactory(envelopeFactory({ messageType: 'AlwaysRetryable', payload: {} }));
          await reportedBy(worker(sqsEvent([failing]), lambdaContext()));
        }
        const id = randomUUID();
        const keys = ['before', 'cut', 'after'].map((name) => `${name}-${id}`);
        const cutKey = keys[1] as string;
        let reached!: () => void;
        const atGate = new Promise<void>((resolve) => {
          reached = resolve;
        });
        let open!: () => void;
        gates.set(cutKey, {
          phase,
          reached,
          opened: new Promise<void>((resolve) => {
            open = resolve;
          }),
        });
        let records: SQSRecord[] = keys.map((key) => sqsRecordFactory(message(key)));
        const escapedBefore = escaped.length;

        // Act: the invocation; cut its connection in the middle of the gated record's transaction
        const invocation = reportedBy(worker(sqsEvent(records), lambdaContext(20_000)));
        await atGate;
        if (phase === 'statement') {
          await waitFor(
            'the gated statement running',
            async () =>
              (
                await db.sql`
                  select 1 from pg_stat_activity
                  where datname = current_database() and state = 'active' and query like 'select pg_sleep%'
                `
              ).length === 1,
            10_000,
          );
        }
        const closesBefore = closes;
        if (via === 'proxy') proxy.down();
        else if (via === 'reset') proxy.reset();
        else {
          await db.sql`
            select pg_terminate_backend(pid) from pg_stat_activity
            where datname = current_database() and application_name = ${APPLICATION_NAME}
          `;
        }
        await waitFor('the worker seeing its connection close', () => closes > closesBefore, 10_000);
        open();
        const reported = await invocation;
        await waitFor(
          'the statement after the cut to settle',
          () => afterCut.has(cutKey) || escaped.length > escapedBefore,
          10_000,
        );
        // Two turns of the event loop: a write postgres.js deferred to the next one runs before the check.
        await new Promise((resolve) => setImmediate(resolve));
        await new Promise((resolve) => setImmediate(resolve));

        // Assess: nothing escaped; the cut record was reported retryable, never acknowledged
        expect(escaped.slice(escapedBefore)).toEqual([]);
        expect(afterCut.get(cutKey)).not.toBe('ok');
        expect(reported.has(records[1]?.messageId as string)).toBe(true);
        const cutOutcome = recorder.outcomes.find((outcome) => outcome.messageId === records[1]?.messageId);
        expect(cutOutcome?.result).toBe('RETRYABLE_FAILURE');
        // What was acknowledged committed both of its writes; what was reported committed nothing
        const firstWrites = await writesOf(keys);
        for (const [index, key] of keys.entries()) {
          const acknowledged = !reported.has(records[index]?.messageId as string);
          expect(firstWrites[key], key).toBe(acknowledged ? 2 : undefined);
        }

        // Act: the redeliveries of what was reported, in the same process, until none is reported (a session the
        // proxy cut may hold its locks until the server notices, within client_connection_check_interval)
        proxy.up();
        await waitFor(
          'every record acknowledged',
          async () => {
            records = records
              .filter((record) => reported.has(record.messageId))
              .map((record) => ({
                ...record,
                attributes: {
                  ...record.attributes,
                  ApproximateReceiveCount: String(Number(record.attributes.ApproximateReceiveCount) + 1),
                },
              }));
            const again = await reportedBy(worker(sqsEvent(records), lambdaContext(20_000)));
            reported.clear();
            for (const messageId of again) reported.add(messageId);
            return reported.size === 0;
          },
          20_000,
          200,
        );

        // Assess: every key applied once, its inbox row completed; still nothing escaped
        expect(await writesOf(keys)).toEqual(Object.fromEntries(keys.map((key) => [key, 2])));
        const inbox = await db.sql`
          select status from worker_inbox where idempotency_key in ${db.sql(keys.map((key) => `loss:${key}`))}
        `;
        expect(inbox.map((row) => row.status)).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED']);
        expect(escaped.slice(escapedBefore)).toEqual([]);
      },
    );
  });
});
