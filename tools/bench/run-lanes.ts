import { performance } from 'node:perf_hooks';
import type { SQSRecord } from 'aws-lambda';

/** One "Lambda execution environment" of the bench: its own client and handler. */
export interface Lane {
  /** Processes one batch; returns the latency of each message in milliseconds. */
  process(batch: SQSRecord[]): Promise<number[]>;
  close(): Promise<void>;
}

/** What {@link runLanes} measured. */
export interface LaneRun {
  readonly messages: number;
  readonly elapsedMs: number;
  readonly latencies: number[];
}

/**
 * Runs `lanes` environments in parallel, each pulling the next batch from a shared list until it is empty
 * (as Lambda's pollers hand batches to idle environments). First every lane processes its share of
 * `warmup` (connections opened, code paths warm), then `beforeMeasure` runs, then the clock covers only the
 * measured batches.
 */
export async function runLanes(input: {
  lanes: readonly Lane[];
  warmup: readonly SQSRecord[][];
  measured: readonly SQSRecord[][];
  beforeMeasure: () => Promise<void>;
}): Promise<LaneRun> {
  const drain = async (batches: readonly SQSRecord[][], latencies: number[]) => {
    let next = 0;
    await Promise.all(
      input.lanes.map(async (lane) => {
        for (let index = next++; index < batches.length; index = next++) {
          latencies.push(...(await lane.process(batches[index] as SQSRecord[])));
        }
      }),
    );
  };
  await drain(input.warmup, []);
  await input.beforeMeasure();
  const latencies: number[] = [];
  const started = performance.now();
  await drain(input.measured, latencies);
  const elapsedMs = performance.now() - started;
  return { messages: input.measured.reduce((sum, batch) => sum + batch.length, 0), elapsedMs, latencies };
}
