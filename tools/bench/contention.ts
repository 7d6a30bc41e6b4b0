import { randomBytes } from 'node:crypto';
import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type postgres from 'postgres';
import * as z from 'zod/mini';
import { defineHandler } from '../../lambda/index.ts';
import { loadPollerConfig } from '../../lambda/runtimes/poller/poller-config.ts';
import type { PollerEvent } from '../../lambda/runtimes/poller/start-poller.ts';
import { startPollerFromConfig } from '../../lambda/runtimes/poller/start-poller-from-config.ts';
import { exampleEnvelope } from '../local/example-envelope.ts';
import { createLocalQueues, queueCounts } from '../local/local-queues.ts';
import type { LocalSqs } from '../local/local-sqs.ts';
import { percentile } from './statistics.ts';

/** The settings of one contention run (both passes share them). */
export interface ContentionSettings {
  readonly messages: number;
  /** The fixed setting's records in flight, and the adaptive limit's ceiling. */
  readonly concurrency: number;
  /** Aggregates the messages update (each one row): few rows, many writers. */
  readonly hotRows: number;
  /** The worker's `lock_timeout` (ms): a record waiting longer for the row fails LOCK_TIMEOUT, retryable. */
  readonly lockTimeoutMs: number;
  /** How long the database is slow: a session holds every hot row, again and again, for this long from the start. */
  readonly slowForMs: number;
  /** Each hold of the rows during the slow phase (ms): longer than the lock timeout, so waiting records fail. */
  readonly holdMs: number;
}

/** What one pass measured. */
export interface ContentionPass {
  /** With the slow phase (`slow`), or the hot rows alone (`quiet`): the cost of the limit when nothing is wrong. */
  readonly scenario: 'quiet' | 'slow';
  readonly mode: 'fixed' | 'adaptive';
  readonly seconds: number;
  readonly completed: number;
  readonly messagesPerSecond: number;
  /** Deliveries that ended retryable (reported with a backoff), per message. */
  readonly retryablePerMessage: number;
  /** Receives beyond the first of each message: what SQS counts toward maxReceiveCount. */
  readonly extraReceives: number;
  /** p99 of a delivery's time from its receive to its settle (ms). */
  readonly p99RecordMs: number;
  readonly dlq: number;
  /** The adaptive limit's lowest value (the fixed setting's concurrency in the fixed pass). */
  readonly lowestLimit: number;
}

/** The defaults of `npm run bench -- --only contention`. */
export const CONTENTION_DEFAULTS: ContentionSettings = {
  messages: 1200,
  concurrency: 16,
  hotRows: 4,
  lockTimeoutMs: 500,
  slowForMs: 20_000,
  holdMs: 1500,
};

const hotIncrement = defineHandler({
  messageType: 'BenchHotIncrement',
  schemaVersion: 1,
  payload: z.object({ row: z.int() }),
  async handle({ sql, payload }) {
    await sql`update bench_hot_rows set n = n + 1 where id = ${payload.row}`;
    return { resultRef: `hot/${payload.row}` };
  },
});

/** Sends `count` envelopes for the hot rows, 10 per SendMessageBatch. */
async function sendMessages(sqs: SQSClient, queueUrl: string, count: number, rows: number, run: string) {
  for (let first = 0; first < count; first += 10) {
    const entries = Array.from({ length: Math.min(10, count - first) }, (_, at) => {
      const index = first + at;
      const body = exampleEnvelope({
        messageType: 'BenchHotIncrement',
        idempotencyKey: `bench-contention:${run}:${index}`,
        aggregateType: 'HotRow',
        aggregateId: String(index % rows),
        payload: { row: index % rows },
        producer: 'bench',
      });
      return { Id: String(at), MessageBody: JSON.stringify(body) };
    });
    await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
  }
}

/** Holds every hot row in one transaction for `holdMs`, again and again, until `untilMs` (the slow database). */
async function slowDatabase(admin: postgres.Sql, settings: ContentionSettings, untilMs: number) {
  while (Date.now() < untilMs) {
    await admin.begin(async (tx) => {
      await tx`select id from bench_hot_rows for update`;
      await tx`select pg_sleep(${settings.holdMs / 1000})`;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * One pass: a fresh queue (DLQ after 5 receives, as the stack's), the messages sent, the slow phase started, and the
 * real poller (`startPollerFromConfig`, the Fargate runtime's wiring) draining the queue with its adaptive limit on
 * or off; ends when every message completed or sits in the DLQ.
 */
async function runPass(
  scenario: ContentionPass['scenario'],
  mode: ContentionPass['mode'],
  input: {
    admin: postgres.Sql;
    url: string;
    sqs: LocalSqs;
    settings: ContentionSettings;
    log: (line: string) => void;
  },
): Promise<ContentionPass> {
  const { admin, sqs, settings } = input;
  const run = `${mode}-${randomBytes(3).toString('hex')}`;
  const client = sqs.client();
  const queues = await createLocalQueues(client, {
    name: `bench-contention-${run}`,
    maxReceiveCount: 5,
    visibilityTimeoutSeconds: 30,
  });
  await sendMessages(client, queues.queueUrl, settings.messages, settings.hotRows, run);
  const consumer = `bench-contention-${run}`;
  const url = new URL(input.url);
  url.searchParams.set('lock_timeout', String(settings.lockTimeoutMs));
  const config = loadPollerConfig({
    DATABASE_URL: url.toString(),
    WORKER_CONSUMER: consumer,
    WORKER_QUEUE_URL: queues.queueUrl,
    SQS_ENDPOINT: sqs.endpoint,
    AWS_REGION: sqs.region,
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    DB_POOL_SIZE: String(settings.concurrency),
    POLLER_CONCURRENCY: String(settings.concurrency),
    POLLER_ADAPTIVE_CONCURRENCY: mode === 'adaptive' ? 'on' : 'off',
    POLLER_WAIT_SECONDS: '1',
    WORKER_BACKOFF_BASE_SECONDS: '1',
    WORKER_BACKOFF_MAX_SECONDS: '4',
  });
  const receivedAt = new Map<string, number>();
  const recordMs: number[] = [];
  let retryable = 0;
  let receives = 0;
  let lowestLimit = settings.concurrency;
  const onEvent = (event: PollerEvent) => {
    const now = performance.now();
    if (event.type === 'received') {
      receives += event.messageIds.length;
      for (const id of event.messageIds) receivedAt.set(id, now);
    } else if (event.type === 'settled') {
      retryable += event.visibility.length;
      const ids = [...event.deleted, ...event.visibility.map((entry) => entry.messageId)];
      for (const id of ids) recordMs.push(now - (receivedAt.get(id) ?? now));
    } else if ((event as { type: string }).type === 'limit') {
      lowestLimit = Math.min(lowestLimit, (event as unknown as { to: number }).to);
    }
  };
  const started = performance.now();
  const slow = slowDatabase(admin, settings, Date.now() + (scenario === 'slow' ? settings.slowForMs : 0));
  const running = await startPollerFromConfig({ handlers: [hotIncrement], config, onEvent });
  let completed = 0;
  let dlq = 0;
  try {
    for (;;) {
      const [row] = await admin<{ done: number }[]>`
        select count(*)::int as done from worker_inbox where consumer = ${consumer} and status = 'COMPLETED'
      `;
      completed = row?.done ?? 0;
      dlq = (await queueCounts(client, queues.dlqUrl)).visible;
      if (completed + dlq >= settings.messages || performance.now() - started > 600_000) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await running.poller.stop({ timeoutMs: 30_000 });
    await running.close('graceful');
    await slow;
  }
  const seconds = (performance.now() - started) / 1000;
  input.log(
    `contention, ${scenario}, ${mode}: ${completed} completed, ${dlq} in the DLQ in ${seconds.toFixed(1)} s`,
  );
  return {
    scenario,
    mode,
    seconds,
    completed,
    messagesPerSecond: completed / seconds,
    retryablePerMessage: retryable / settings.messages,
    extraReceives: Math.max(0, receives - settings.messages),
    p99RecordMs: percentile(recordMs, 99),
    dlq,
    lowestLimit,
  };
}

/**
 * The contention scenario: a hot aggregate (few rows, every message an update of one) under row-lock contention,
 * and a database slow for a while (a session holding the rows longer than the worker's lock timeout, again and
 * again), drained by the poller at a fixed concurrency and then with its adaptive limit, on the same database; first
 * the hot rows alone (nothing for the limit to react to: what it costs), then with the slow phase.
 */
export async function benchContention(input: {
  readonly admin: postgres.Sql;
  readonly url: string;
  readonly sqs: LocalSqs;
  readonly settings?: Partial<ContentionSettings>;
  readonly log: (line: string) => void;
}): Promise<{ settings: ContentionSettings; passes: ContentionPass[] }> {
  const settings = { ...CONTENTION_DEFAULTS, ...input.settings };
  await input.admin`create table if not exists bench_hot_rows (id int primary key, n bigint not null default 0)`;
  await input.admin`
    insert into bench_hot_rows (id) select generate_series(0, ${settings.hotRows - 1}) on conflict (id) do nothing
  `;
  const passes: ContentionPass[] = [];
  for (const scenario of ['quiet', 'slow'] as const) {
    for (const mode of ['fixed', 'adaptive'] as const) {
      passes.push(await runPass(scenario, mode, { ...input, settings }));
    }
  }
  return { settings, passes };
}
