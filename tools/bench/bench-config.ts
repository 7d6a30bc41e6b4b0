import { performance } from 'node:perf_hooks';
import type postgres from 'postgres';
import { type BenchMode, benchLane } from './bench-lanes.ts';
import { caseIds, chunk, deadlineRecords } from './bench-messages.ts';
import type { LaneThreads } from './lane-threads.ts';
import type { RoundTripProxy } from './round-trip-proxy.ts';
import { runLanes } from './run-lanes.ts';
import type { SeenStatement } from './statement-counter.ts';
import { median, percentile } from './statistics.ts';

/** The batch size of every configuration (SQS event source mapping default and maximum for FIFO). */
export const BATCH_SIZE = 10;

/** The figures of one configuration. */
export interface ConfigResult {
  readonly mode: BenchMode;
  readonly concurrency: number;
  readonly messages: number;
  readonly elapsedMs: number;
  readonly messagesPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Client write bursts that follow a server response, per message (counted by the proxy). */
  readonly roundTripsPerMessage: number;
  /** Statements sent, per message (Parse and Query messages, counted by the proxy). */
  readonly statementsPerMessage: number;
  /** Worker modes: msgs/s ÷ the baseline's, the median over rounds of the ratio within each round. */
  readonly vsBaseline?: number;
  /** per-batch: msgs/s ÷ per-message's, the median over rounds of the ratio within each round. */
  readonly vsPerMessage?: number;
  /** The distinct statements of the counted messages (for the pinning audit). */
  readonly statements?: readonly SeenStatement[];
}

/** Messages of the counting pass of each configuration (after one warm-up batch). */
export const COUNTED_MESSAGES = 100;

/**
 * Runs one configuration: creates its cases (as `CaseStageChanged` would: stage INVESTIGATION, version 1)
 * directly on `admin`, flushes the database (`vacuum analyze`, `checkpoint`) so that earlier configurations
 * leave no work behind, then runs `concurrency` lanes, each on a thread of its own (a Lambda environment has its
 * own CPU; one event loop for all would measure that loop): a warm-up, then `messages` measured messages in
 * batches of {@link BATCH_SIZE}.
 *
 * On loopback (no `network`) the lanes connect straight to the database, and one lane then runs
 * {@link COUNTED_MESSAGES} more through the counting proxy for the round trips and statements per message: the
 * proxy's thread hop per round trip stays out of the timed run (timing through it measured the proxy as much as
 * the worker). With `network` the lanes connect through that proxy, whose delay per direction models the
 * network to RDS Proxy: its hop is part of the modelled latency, and the timed messages are the counted ones.
 */
export async function benchConfig(input: {
  mode: BenchMode;
  concurrency: number;
  messages: number;
  warmupMessages: number;
  runId: string;
  admin: postgres.Sql;
  directUrl: string;
  proxiedUrl: string;
  proxy: RoundTripProxy;
  threads: LaneThreads;
  /** Time the lanes through this delaying proxy (`url` is its address) instead of straight to the database. */
  network?: { url: string; proxy: RoundTripProxy };
}): Promise<ConfigResult> {
  const prefix = `bench-${input.runId}-${input.mode}-c${input.concurrency}`;
  const total = input.warmupMessages + input.messages;
  const all = total + BATCH_SIZE + COUNTED_MESSAGES;
  const ids = caseIds(prefix, all);
  await input.admin`
    insert into cases (case_id, stage, version)
    select case_id, 'INVESTIGATION', 1 from unnest(${input.admin.array(ids)}::text[]) as case_id
  `;
  await input.admin`vacuum analyze worker_inbox, cases, case_deadlines`;
  await input.admin`checkpoint`;

  const batches = chunk(deadlineRecords(prefix, all), BATCH_SIZE);
  const warmupBatches = Math.ceil(input.warmupMessages / BATCH_SIZE);
  const timedBatches = Math.ceil(total / BATCH_SIZE);
  const network = input.network;
  const lanes = await input.threads.open(
    input.concurrency,
    input.mode,
    network ? network.url : input.directUrl,
  );
  const counting = network ? undefined : benchLane(input.mode, input.proxiedUrl);
  const countedProxy = network ? network.proxy : input.proxy;
  let before = { roundTrips: 0, statements: 0 };
  const startCounting = async () => {
    before = await countedProxy.counts();
  };
  // Forgets the statements of earlier configurations; the warm-up's stay (a prepared statement is parsed once).
  await countedProxy.statements();
  try {
    const run = await runLanes({
      lanes,
      warmup: batches.slice(0, warmupBatches),
      measured: batches.slice(warmupBatches, timedBatches),
      beforeMeasure: network ? startCounting : async () => {},
    });
    const counted = counting
      ? await runLanes({
          lanes: [counting],
          warmup: batches.slice(timedBatches, timedBatches + 1),
          measured: batches.slice(timedBatches + 1),
          beforeMeasure: startCounting,
        })
      : run;
    const after = await countedProxy.counts();
    const statements = await countedProxy.statements();
    return {
      mode: input.mode,
      concurrency: input.concurrency,
      messages: run.messages,
      elapsedMs: run.elapsedMs,
      messagesPerSecond: run.messages / (run.elapsedMs / 1000),
      p50Ms: percentile(run.latencies, 50),
      p99Ms: percentile(run.latencies, 99),
      roundTripsPerMessage: (after.roundTrips - before.roundTrips) / counted.messages,
      statementsPerMessage: (after.statements - before.statements) / counted.messages,
      statements,
    };
  } finally {
    await Promise.all([...lanes, ...(counting ? [counting] : [])].map((lane) => lane.close()));
  }
}

/** Milliseconds since `since` (a `performance.now()` reading), for progress lines. */
export function since(started: number): string {
  return `${((performance.now() - started) / 1000).toFixed(1)} s`;
}

/** The run with the median throughput (the middle one of an odd count, the lower middle of an even one). */
/**
 * The median over rounds of `numerator[round]` ÷ `denominator[round]` msgs/s. Runs of one round follow each other
 * within seconds, so their ratio cancels most of the machine's slower drift, which the ratio of two medians
 * taken from different rounds does not.
 */
export function pairedRatio(
  numerator: readonly ConfigResult[],
  denominator: readonly ConfigResult[],
): number {
  if (numerator.length === 0 || numerator.length !== denominator.length) {
    throw new Error(
      `pairedRatio needs as many rounds on each side (given ${numerator.length} and ${denominator.length})`,
    );
  }
  return median(
    numerator.map(
      (run, round) => run.messagesPerSecond / (denominator[round] as ConfigResult).messagesPerSecond,
    ),
  );
}

export function medianRun(runs: readonly ConfigResult[]): ConfigResult {
  const sorted = [...runs].sort((a, b) => a.messagesPerSecond - b.messagesPerSecond);
  const middle = sorted[Math.floor((sorted.length - 1) / 2)];
  if (!middle) throw new Error('medianRun needs at least one run');
  return middle;
}
