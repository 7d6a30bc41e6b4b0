import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { ROUND_TRIP_OPTIONS } from '../../lambda/postgres/round-trip-options.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import { lambdaContext } from '../local/lambda-context.ts';
import { minimalBaseline } from './minimal-baseline.ts';
import { minimalBatchBaseline } from './minimal-batch-baseline.ts';
import { quietTelemetry } from './quiet-telemetry.ts';
import { rawBaseline } from './raw-baseline.ts';
import type { Lane } from './run-lanes.ts';

/**
 * What is benchmarked: `baseline`, the worker's own SQL by hand (`raw-baseline.ts`); `minimal` and
 * `minimal-batch`, the smallest correct hand-written inbox transaction per message and per batch
 * (`minimal-baseline.ts`, `minimal-batch-baseline.ts`); the worker in each commit mode, with `prepare: false` as
 * deployed behind RDS Proxy, or `-prepared` with named prepared statements (`DB_PREPARE=true`, direct
 * connections only).
 */
export type BenchMode =
  | 'baseline'
  | 'minimal'
  | 'minimal-batch'
  | 'per-message'
  | 'per-batch'
  | 'per-message-prepared'
  | 'per-batch-prepared';

/** The worker's commit mode of a worker lane, `undefined` for the hand-written ones. */
export function commitModeOf(mode: BenchMode): 'per-message' | 'per-batch' | undefined {
  if (mode === 'per-message' || mode === 'per-message-prepared') return 'per-message';
  if (mode === 'per-batch' || mode === 'per-batch-prepared') return 'per-batch';
  return undefined;
}

/** Consumer name of the bench's inbox rows. */
export const BENCH_CONSUMER = 'bench-worker';

/**
 * A postgres.js client as a Lambda environment has it (`lambda/postgres/db.ts`: pool of 1, `prepare: false` unless
 * `DB_PREPARE=true`). No `debug` hook: it records a stack trace per query, a client cost production does not have
 * (the proxy counts statements).
 */
function laneClient(url: string, prepare: boolean, roundTrips: boolean): postgres.Sql {
  return postgres(url, {
    // The worker's driver options (createSql), unknown to postgres.js's type declarations; the minimal baselines
    // keep postgres.js's defaults, as a hand-written consumer would.
    ...(roundTrips ? (ROUND_TRIP_OPTIONS as object) : {}),
    prepare,
    max: 1,
    idle_timeout: 30,
    connect_timeout: 5,
    onnotice: () => {},
    connection: { application_name: 'sqs-inbox-worker-bench' },
  });
}

/**
 * One lane of `mode` over the database at `url`. Worker lanes call the handler built by `createWorker` with
 * the example domain, as Lambda would (an SQS event and a context with a 30 s timeout); a batch with any
 * failure aborts the bench, so every figure is of fully processed messages.
 */
export function benchLane(mode: BenchMode, url: string): Lane {
  const sql = laneClient(url, mode.endsWith('-prepared'), mode !== 'minimal' && mode !== 'minimal-batch');
  const commitMode = commitModeOf(mode);
  if (!commitMode) {
    const baseline =
      mode === 'baseline' ? rawBaseline : mode === 'minimal' ? minimalBaseline : minimalBatchBaseline;
    return {
      process: (batch) => baseline(sql, BENCH_CONSUMER, batch),
      close: () => sql.end({ timeout: 5 }),
    };
  }
  let recordTimes: number[] = [];
  const { logger, metrics } = quietTelemetry(BENCH_CONSUMER, (fields) => {
    if (typeof fields.processingMs === 'number') recordTimes.push(fields.processingMs);
  });
  const handler = createWorker({
    consumer: BENCH_CONSUMER,
    handlers: exampleHandlers,
    sql,
    logger,
    metrics,
    commitMode,
    // A sub-millisecond clock, so that record times (processingMs) are precise enough for percentiles.
    now: () => performance.timeOrigin + performance.now(),
  });
  return {
    async process(batch) {
      recordTimes = [];
      const started = performance.now();
      const response = await handler(
        { Records: batch },
        lambdaContext({ functionName: 'bench-worker', timeoutMs: 30_000 }),
      );
      const batchMs = performance.now() - started;
      if (response.batchItemFailures.length > 0) {
        throw new Error(
          `The ${mode} worker reported ${response.batchItemFailures.length} of ${batch.length} records as failed; the bench expects every record to complete (are the cases created?)`,
        );
      }
      // per-message: the time of each record; per-batch: records share one transaction, so batch time / records.
      return commitMode === 'per-message' ? recordTimes : batch.map(() => batchMs / batch.length);
    },
    close: () => sql.end({ timeout: 5 }),
  };
}
