import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { createWorker } from '../../lambda/worker/create-worker.ts';
import { lambdaContext } from '../local/lambda-context.ts';
import { quietTelemetry } from './quiet-telemetry.ts';
import { rawBaseline } from './raw-baseline.ts';
import type { Lane } from './run-lanes.ts';

/** What is benchmarked: the raw baseline or the worker in one of its commit modes. */
export type BenchMode = 'baseline' | 'per-message' | 'per-batch';

/** Consumer name of the bench's inbox rows. */
export const BENCH_CONSUMER = 'bench-worker';

/**
 * A postgres.js client as a Lambda environment has it (`lambda/db.ts`: pool of 1, `prepare: false`). No `debug`
 * hook: it records a stack trace per query, a client cost production does not have (the proxy counts statements).
 */
function laneClient(url: string): postgres.Sql {
  return postgres(url, {
    prepare: false,
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
  const sql = laneClient(url);
  if (mode === 'baseline') {
    return {
      process: (batch) => rawBaseline(sql, BENCH_CONSUMER, batch),
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
    commitMode: mode,
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
      return mode === 'per-message' ? recordTimes : batch.map(() => batchMs / batch.length);
    },
    close: () => sql.end({ timeout: 5 }),
  };
}
