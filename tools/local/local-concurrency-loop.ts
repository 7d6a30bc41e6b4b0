import { createFleetLimit, type WorkerMetricsSource } from '../../lambda/breaker/fleet-limit.ts';
import {
  type Breaker,
  type BreakerLogger,
  type BreakerMetrics,
  createBreaker,
} from '../../lambda/breaker/run-breaker.ts';
import { ConfigError } from '../../lambda/errors.ts';
import type { EventSourceMapping } from './event-source-mapping.ts';
import { type LocalLambdaControl, localLambdaControl } from './local-lambda-control.ts';
import { type LocalMetricData, localMetricData } from './local-metric-data.ts';

/** A minute of the deployed loop, in wall-clock ms of the local one. @default 2000 (30× faster) */
export const LOCAL_LOOP_MINUTE_MS = 2000;

/** Options of {@link startLocalConcurrencyLoop}. */
export interface LocalConcurrencyLoopOptions {
  /** The worker's local event source mapping: its `maxConcurrency` now is the ceiling. */
  readonly esm: EventSourceMapping;
  /** The breaker's probe of the database as the worker reaches it (resolves when it answers). */
  readonly probe: () => Promise<unknown>;
  /** The lowest `MaximumConcurrency` the loop sets (2–ceiling). @default 2 */
  readonly floor?: number;
  /** Where the worker's metrics are: its namespace and `service` dimension (the function's Powertools variables). */
  readonly source: WorkerMetricsSource;
  /** A minute of the deployed schedule in wall-clock ms (the loop's clock runs `60000 / minuteMs` times faster). */
  readonly minuteMs?: number;
  readonly logger: BreakerLogger;
  readonly metrics: BreakerMetrics;
}

/** A running local control loop, returned by {@link startLocalConcurrencyLoop}. */
export interface LocalConcurrencyLoop {
  /** Feed it every line the worker function writes: its EMF metrics are what the loop reads. */
  readonly metricData: LocalMetricData;
  /** The Lambda control plane the breaker drives the mapping through (every call recorded). */
  readonly control: LocalLambdaControl;
  readonly breaker: Breaker;
  /** The loop's clock (epoch ms, running faster than the wall clock). */
  now(): number;
  /** Stops ticking (after the tick in progress); the mapping keeps its `MaximumConcurrency`. */
  stop(): Promise<void>;
}

/** A clock starting at the wall clock's now and running `speed` times faster. */
function fastClock(speed: number): () => number {
  const origin = Date.now();
  return () => origin + (Date.now() - origin) * speed;
}

/**
 * The deployed breaker function's loop over a local event source mapping: {@link createBreaker} with its control loop
 * of the mapping's `MaximumConcurrency` ({@link createFleetLimit}), as `breakerFromConfig` wires them, with Lambda's
 * control plane ({@link localLambdaControl}) and CloudWatch's metrics ({@link localMetricData}, fed the function's
 * EMF lines) local. Deployed, a decision reads a one-minute window a minute after it closed and the breaker checks
 * every 10 s; here every duration of the loop (windows, lag, the breaker's open time and check interval) runs on a
 * clock `60000 / minuteMs` times faster, so a contention episode of seconds moves the limit as one of minutes would.
 * The worker's own timings (lock timeout, backoff, visibility) stay real.
 *
 * @throws ConfigError when `floor` is outside 2–the mapping's `maxConcurrency`, or `minuteMs` is below 600.
 */
export function startLocalConcurrencyLoop(options: LocalConcurrencyLoopOptions): LocalConcurrencyLoop {
  const { esm } = options;
  const ceiling = esm.maxConcurrency;
  const floor = options.floor ?? 2;
  const minuteMs = options.minuteMs ?? LOCAL_LOOP_MINUTE_MS;
  if (!Number.isInteger(floor) || floor < 2 || floor > ceiling) {
    throw new ConfigError(
      `the local concurrency loop's floor must be a whole number from 2 to the mapping's maxConcurrency ${ceiling} (given ${floor}); raise the concurrency or lower the floor`,
    );
  }
  if (!Number.isFinite(minuteMs) || minuteMs < 600) {
    throw new ConfigError(
      `minuteMs must be at least 600 (given ${minuteMs}): the loop's clock would outrun its ticks`,
    );
  }
  const now = fastClock(60_000 / minuteMs);
  const control = localLambdaControl(esm);
  const metricData = localMetricData({ now });
  const { logger, metrics } = options;
  const fleetLimit = createFleetLimit({
    cloudWatch: metricData.client,
    lambda: control.client,
    mappingUuid: control.uuid,
    source: options.source,
    limit: { floor, ceiling },
    windowSeconds: 60,
    logger,
    metrics,
  });
  // The construct's breaker defaults (failure threshold 2, open ≥ 60 s, half-open 60 s at 2, check every 10 s).
  const breaker = createBreaker({
    client: control.client,
    mappingUuid: control.uuid,
    probe: options.probe,
    probeTimeoutMs: 5000,
    scaling: { mode: 'maximum-concurrency', maxConcurrency: ceiling },
    halfOpenConcurrency: Math.min(2, ceiling),
    settings: {
      failureThreshold: 2,
      minOpenMs: 60_000,
      probeBackoffBaseMs: 15_000,
      probeBackoffMaxMs: 300_000,
      halfOpenMs: 60_000,
    },
    logger,
    metrics,
    now,
    fleetLimit,
  });
  const checkMs = minuteMs / 6;
  let stopped = false;
  let wake: (() => void) | undefined;
  const running = (async () => {
    while (!stopped) {
      await breaker.tick();
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, checkMs).unref();
      });
    }
  })();
  return {
    metricData,
    control,
    breaker,
    now,
    async stop() {
      stopped = true;
      wake?.();
      await running;
    },
  };
}
