import {
  type CloudWatchClient,
  GetMetricDataCommand,
  type GetMetricDataCommandOutput,
  type MetricDataQuery,
} from '@aws-sdk/client-cloudwatch';
import {
  decideLimit,
  type LimitDecision,
  type LimitSettings,
  type LimitState,
  type WindowSignals,
} from '../concurrency/decide-limit.ts';
import { METRIC_NAMES } from '../constants.ts';
import { HEALTH_METRICS } from '../health/health-metrics.ts';
import {
  CONCURRENCY_PIN_TAG,
  type EventSourceMappingClient,
  type MappingSnapshot,
  setMaxConcurrency,
} from './mapping-control.ts';
import type { BreakerLogger, BreakerMetrics } from './run-breaker.ts';

/** AWS's range of an event source mapping's `ScalingConfig.MaximumConcurrency`. */
export const MAPPING_CONCURRENCY_RANGE = { min: 2, max: 1000 } as const;

/**
 * How long after a minute ends its EMF metrics are read: the worker's log lines become metrics within about a
 * minute, so the window read ends at the last whole minute at least this long ago (a later end would read a
 * partial minute as a quiet one).
 */
export const METRICS_LAG_MS = 60_000;

/** The part of `CloudWatchClient` the control loop uses (`send` of GetMetricData). Tests pass a scripted fake. */
export type MetricDataClient = Pick<CloudWatchClient, 'send'>;

/** Where the worker's metrics are: its namespace and the `service` dimension (Powertools' only dimension). */
export interface WorkerMetricsSource {
  readonly namespace: string;
  readonly service: string;
}

/** Collaborators and settings of {@link createFleetLimit}. */
export interface FleetLimitOptions {
  /** CloudWatch (a `CloudWatchClient`; a scripted fake in tests). */
  readonly cloudWatch: MetricDataClient;
  /** Lambda's control plane: the mapping's one writer is the breaker, this is its client. */
  readonly lambda: EventSourceMappingClient;
  readonly mappingUuid: string;
  readonly source: WorkerMetricsSource;
  /** The bounds: `floor` from `CONCURRENCY_FLOOR`, `ceiling` the configured `MaximumConcurrency`; and the gains. */
  readonly limit: LimitSettings;
  /** The window one decision reads (a whole number of minutes, 60–300 s). */
  readonly windowSeconds: number;
  readonly logger: BreakerLogger;
  readonly metrics: BreakerMetrics;
}

/** The control loop's memory between ticks (the breaker function's warm environment). */
export interface FleetLimitState {
  /** The transaction-time baseline learnt so far (ms); relearnt from the first window after a cold start. */
  readonly baselineMs?: number;
  /** The end of the last window decided (epoch ms): each window is decided once. */
  readonly lastWindowEnd?: number;
  /** Where a recovery doubles up to ({@link LimitState.recoverTo}); forgotten at a cold start (then +1 a window). */
  readonly recoverTo?: number;
}

/** What one {@link FleetLimit.tick} did. */
export interface FleetLimitTick {
  /** `pinned`: set to or held at the pin; `decided`: a window was read and decided; `waiting`: no new window yet. */
  readonly outcome: 'pinned' | 'decided' | 'waiting' | 'failed';
  /** The mapping's `MaximumConcurrency` after the tick. */
  readonly limit: number;
  readonly decision?: LimitDecision;
  readonly window?: WindowSignals;
  readonly error?: string;
}

/** The mapping's `MaximumConcurrency` moved by the fleet's signals of load, one window at a time. */
export interface FleetLimit {
  /**
   * One tick, for a mapping the breaker holds closed, enabled and not held (the breaker's decision always comes
   * first): sets a pinned mapping to its pin, else decides the last window when a new one has closed.
   */
  tick(mapping: MappingSnapshot, now: number): Promise<FleetLimitTick>;
  readonly state: FleetLimitState;
}

/** The pin's value when it is a valid `MaximumConcurrency`, `'invalid'` when the tag holds anything else. */
export function parsePin(tag: string | undefined): number | 'invalid' | undefined {
  if (tag === undefined) return undefined;
  const value = Number(tag);
  const { min, max } = MAPPING_CONCURRENCY_RANGE;
  return Number.isInteger(value) && value >= min && value <= max ? value : 'invalid';
}

/**
 * The queries of one window: the ok outcomes and each signal of load (Sum), the median transaction time (p50), and
 * the health job's lock waits and long transactions (Maximum) and deadlocks (Sum).
 */
const QUERIES = [
  ['completed', METRIC_NAMES.completed, 'Sum'],
  ['duplicate', METRIC_NAMES.duplicate, 'Sum'],
  ['stale', METRIC_NAMES.staleVersionSkipped, 'Sum'],
  ['contention', METRIC_NAMES.loadContention, 'Sum'],
  ['throttle', METRIC_NAMES.loadThrottle, 'Sum'],
  ['unavailable', METRIC_NAMES.loadUnavailable, 'Sum'],
  ['slow', METRIC_NAMES.loadSlow, 'Sum'],
  ['transaction', METRIC_NAMES.dbTransactionMs, 'p50'],
  // The database's own signals, as the health job publishes them (same namespace and service dimension).
  ['lockWaits', HEALTH_METRICS.lockWaits, 'Maximum'],
  ['deadlocks', HEALTH_METRICS.deadlocks, 'Sum'],
  ['longTransactions', HEALTH_METRICS.longTransactions, 'Maximum'],
] as const;

/** The GetMetricData queries of the worker's metrics over one window of `periodSeconds`. */
export function windowQueries(source: WorkerMetricsSource, periodSeconds: number): MetricDataQuery[] {
  return QUERIES.map(([id, metricName, stat]) => ({
    Id: id,
    MetricStat: {
      Metric: {
        Namespace: source.namespace,
        MetricName: metricName,
        Dimensions: [{ Name: 'service', Value: source.service }],
      },
      Period: periodSeconds,
      Stat: stat,
    },
    ReturnData: true,
  }));
}

/**
 * The fleet's {@link WindowSignals} of `[start, end)`: the sums of the ok outcomes and of each signal of load, and the
 * p50 of `DbTransactionMs` (of every record: the fleet's metric has no per-outcome split), and the health job's
 * database signals. A metric without a datapoint counts 0 (nothing emitted it: no record, or a health job that did
 * not run — the database's signals then hold nothing); `peakInFlight` is unknown on Lambda.
 */
export async function readWindowSignals(
  client: MetricDataClient,
  source: WorkerMetricsSource,
  window: { readonly start: number; readonly end: number },
): Promise<WindowSignals> {
  const periodSeconds = Math.round((window.end - window.start) / 1000);
  const values = new Map<string, number[]>();
  let nextToken: string | undefined;
  do {
    const page: GetMetricDataCommandOutput = await client.send(
      new GetMetricDataCommand({
        MetricDataQueries: windowQueries(source, periodSeconds),
        StartTime: new Date(window.start),
        EndTime: new Date(window.end),
        ...(nextToken ? { NextToken: nextToken } : {}),
      }),
    );
    for (const result of page.MetricDataResults ?? []) {
      if (result.Id) values.set(result.Id, [...(values.get(result.Id) ?? []), ...(result.Values ?? [])]);
    }
    nextToken = page.NextToken;
  } while (nextToken);
  const sum = (id: string) => (values.get(id) ?? []).reduce((total, value) => total + value, 0);
  const max = (id: string) => Math.max(0, ...(values.get(id) ?? []));
  const median = values.get('transaction')?.[0];
  return {
    ok: sum('completed') + sum('duplicate') + sum('stale'),
    contention: sum('contention'),
    throttle: sum('throttle'),
    unavailable: sum('unavailable'),
    slow: sum('slow'),
    ...(median === undefined ? {} : { medianTransactionMs: median }),
    database: {
      lockWaits: max('lockWaits'),
      deadlocks: sum('deadlocks'),
      longTransactions: max('longTransactions'),
    },
  };
}

/** The last whole window of `windowSeconds` that ended {@link METRICS_LAG_MS} or more before `now`. */
export function lastClosedWindow(now: number, windowSeconds: number): { start: number; end: number } {
  const length = windowSeconds * 1000;
  const end = Math.floor((now - METRICS_LAG_MS) / length) * length;
  return { start: end - length, end };
}

/**
 * The breaker's control loop of the mapping's `MaximumConcurrency` (the Lambda half of the adaptive limit): one
 * Lambda environment cannot see the fleet, so the breaker's function reads the fleet's metrics of the last window
 * (`Load*` sums, ok outcomes, the p50 transaction time) with GetMetricData and moves the mapping with
 * {@link decideLimit} between `CONCURRENCY_FLOOR` and the configured `MaximumConcurrency`. Windows are tumbling, each
 * decided once, so a burst of contention cuts the limit once per window. An operator's pin (the
 * {@link CONCURRENCY_PIN_TAG} tag) wins: the mapping is set to it and never moved. Every change is logged
 * (`concurrency_limit_changed`, with from, to and the reason); `ConcurrencyLimit` is published each tick. A failure
 * (CloudWatch throttled, no permission) is logged and leaves the mapping as it is.
 *
 * @example
 * ```ts
 * const fleet = createFleetLimit({ cloudWatch: new CloudWatchClient({}), lambda, mappingUuid, ... });
 * const breaker = createBreaker({ ..., fleetLimit: fleet });
 * ```
 */
export function createFleetLimit(options: FleetLimitOptions): FleetLimit {
  const { mappingUuid, logger, metrics } = options;
  let state: FleetLimitState = {};

  async function change(from: number, to: number, reason: string, extra: Record<string, unknown> = {}) {
    await setMaxConcurrency(options.lambda, mappingUuid, to);
    const log = to < from ? logger.warn : logger.info;
    log.call(logger, 'concurrency_limit_changed', { mappingUuid, from, to, reason, ...extra });
  }

  function publish(limit: number): void {
    metrics.addMetric(METRIC_NAMES.concurrencyLimit, 'Count', limit);
    metrics.publishStoredMetrics();
  }

  async function decide(current: number, now: number): Promise<FleetLimitTick> {
    const window = lastClosedWindow(now, options.windowSeconds);
    if (state.lastWindowEnd !== undefined && window.end <= state.lastWindowEnd) {
      return { outcome: 'waiting', limit: current };
    }
    const signals = await readWindowSignals(options.cloudWatch, options.source, window);
    const decision = decideLimit(
      {
        limit: current,
        ...(state.baselineMs === undefined ? {} : { baselineMs: state.baselineMs }),
        ...(state.recoverTo === undefined ? {} : { recoverTo: state.recoverTo }),
      },
      signals,
      options.limit,
    );
    if (decision.limit !== current) {
      await change(current, decision.limit, decision.reason, {
        window: { start: new Date(window.start).toISOString(), end: new Date(window.end).toISOString() },
        signals,
      });
    }
    state = {
      lastWindowEnd: window.end,
      ...(decision.baselineMs === undefined ? {} : { baselineMs: decision.baselineMs }),
      ...(decision.recoverTo === undefined ? {} : { recoverTo: decision.recoverTo }),
    };
    return { outcome: 'decided', limit: decision.limit, decision, window: signals };
  }

  return {
    get state() {
      return state;
    },
    async tick(mapping, now) {
      const current = mapping.maxConcurrency ?? options.limit.ceiling;
      try {
        const pin = parsePin(mapping.pin);
        let result: FleetLimitTick;
        if (pin === 'invalid') {
          logger.warn('concurrency_pin_invalid', {
            mappingUuid,
            pin: mapping.pin,
            reason: `the ${CONCURRENCY_PIN_TAG} tag must be a whole number from ${MAPPING_CONCURRENCY_RANGE.min} to ${MAPPING_CONCURRENCY_RANGE.max}; the limit is held where it is`,
          });
          result = { outcome: 'pinned', limit: current };
        } else if (pin !== undefined) {
          if (pin !== current)
            await change(current, pin, `pinned by an operator (${CONCURRENCY_PIN_TAG}=${pin})`);
          result = { outcome: 'pinned', limit: pin };
        } else {
          result = await decide(current, now);
        }
        publish(result.limit);
        return result;
      } catch (error) {
        const described = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        logger.error('concurrency_limit_failed', { mappingUuid, error: described });
        return { outcome: 'failed', limit: current, error: described };
      }
    },
  };
}
