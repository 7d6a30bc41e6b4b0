import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type postgres from 'postgres';
import * as z from 'zod/mini';
import { defineHandler } from '../../lambda/index.ts';
import { exampleEnvelope } from '../local/example-envelope.ts';
import { queueCounts } from '../local/local-queues.ts';
import type { LocalSqs } from '../local/local-sqs.ts';
import type { ContentionPass, ContentionSettings } from './contention.ts';
import { percentile } from './statistics.ts';

/** What every pass of the contention line is given: the bench's database, the emulator, the settings. */
export interface ContentionPassInput {
  readonly admin: postgres.Sql;
  /** The database as the worker reaches it (the pass adds the worker's `lock_timeout`). */
  readonly url: string;
  readonly sqs: LocalSqs;
  readonly settings: ContentionSettings;
  readonly log: (line: string) => void;
}

/** Which pass: the scenario, the mode, the messages, how long the database is slow and each hold (0 for `quiet`). */
export type ContentionPlan = Pick<ContentionPass, 'scenario' | 'mode' | 'messages' | 'slowForMs' | 'holdMs'>;

/** What a pass counted while the queue drained, turned into its figures by {@link contentionFigures}. */
export interface ContentionCounts {
  readonly seconds: number;
  readonly completed: number;
  readonly dlq: number;
  readonly retryable: number;
  readonly extraReceives: number;
  readonly recordMs: readonly number[];
  readonly lowestLimit: number;
}

/** The hot aggregate's handler: every message one update of one of a few rows. */
export const hotIncrement = defineHandler({
  messageType: 'BenchHotIncrement',
  schemaVersion: 1,
  payload: z.object({ row: z.int() }),
  async handle({ sql, payload }) {
    await sql`update bench_hot_rows set n = n + 1 where id = ${payload.row}`;
    return { resultRef: `hot/${payload.row}` };
  },
});

/** Creates the hot rows (once per database). */
export async function createHotRows(admin: postgres.Sql, rows: number): Promise<void> {
  await admin`create table if not exists bench_hot_rows (id int primary key, n bigint not null default 0)`;
  await admin`insert into bench_hot_rows (id) select generate_series(0, ${rows - 1}) on conflict (id) do nothing`;
}

/** Sends `count` envelopes for the hot rows, 10 per SendMessageBatch. */
export async function sendHotMessages(
  sqs: SQSClient,
  queueUrl: string,
  input: { readonly count: number; readonly rows: number; readonly run: string },
): Promise<void> {
  const { count, rows, run } = input;
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

/** Holds every hot row in one transaction for `holdMs`, again and again, for `forMs` from now (the slow database). */
export async function holdHotRows(admin: postgres.Sql, holdMs: number, forMs: number): Promise<void> {
  const until = Date.now() + forMs;
  while (Date.now() < until) {
    await admin.begin(async (tx) => {
      await tx`select id from bench_hot_rows for update`;
      await tx`select pg_sleep(${holdMs / 1000})`;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Waits until every message completed (the consumer's COMPLETED inbox rows) or sits in the DLQ, at most 10 minutes,
 * calling `onTick` every 100 ms; resolves with the two counts.
 */
export async function awaitSettled(
  input: ContentionPassInput,
  queue: {
    readonly consumer: string;
    readonly dlqUrl: string;
    readonly client: SQSClient;
    readonly messages: number;
  },
  onTick: () => void = () => {},
): Promise<{ completed: number; dlq: number }> {
  const started = performance.now();
  for (;;) {
    onTick();
    const [row] = await input.admin<{ done: number }[]>`
      select count(*)::int as done from worker_inbox where consumer = ${queue.consumer} and status = 'COMPLETED'
    `;
    const completed = row?.done ?? 0;
    const dlq = (await queueCounts(queue.client, queue.dlqUrl)).visible;
    if (completed + dlq >= queue.messages || performance.now() - started > 600_000) {
      return { completed, dlq };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Each message's receives as `receives×messages`, fewest first (`1×900 2×250 3×50`): the progress line's. */
export function receivesHistogram(receiveCounts: Iterable<number>): string {
  const histogram = new Map<number, number>();
  for (const count of receiveCounts) histogram.set(count, (histogram.get(count) ?? 0) + 1);
  return [...histogram]
    .sort(([a], [b]) => a - b)
    .map(([count, messages]) => `${count}×${messages}`)
    .join(' ');
}

/** One pass's figures from its counts (per message over the messages sent). */
export function contentionFigures(
  runtime: ContentionPass['runtime'],
  plan: ContentionPlan,
  counts: ContentionCounts,
): ContentionPass {
  return {
    runtime,
    ...plan,
    seconds: counts.seconds,
    completed: counts.completed,
    messagesPerSecond: counts.completed / counts.seconds,
    retryablePerMessage: counts.retryable / plan.messages,
    extraReceives: counts.extraReceives,
    p99RecordMs: percentile(counts.recordMs, 99),
    dlq: counts.dlq,
    lowestLimit: counts.lowestLimit,
  };
}
