import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@aws-lambda-powertools/logger';
import { METRIC_NAMES } from '../constants.ts';
import {
  type BreakerSettings,
  type BreakerState,
  type BreakerStatus,
  type BreakerStep,
  initialBreakerState,
  isProbeDue,
  stepBreaker,
} from './breaker-state.ts';
import type { FleetLimit, FleetLimitTick } from './fleet-limit.ts';
import {
  disableMapping,
  type EventSourceMappingClient,
  enableMapping,
  halfOpenScaling,
  type MappingScaling,
  readMapping,
} from './mapping-control.ts';
import { runProbe } from './run-probe.ts';

/** The metric counted on every transition into a status (EMF, dimension `service`). */
export const BREAKER_METRICS = {
  open: METRIC_NAMES.breakerOpened,
  'half-open': METRIC_NAMES.breakerHalfOpened,
  closed: METRIC_NAMES.breakerClosed,
} as const satisfies Record<BreakerStatus, string>;

/** Structured logger: Powertools `Logger`, or anything with its `info`, `warn` and `error`. */
export type BreakerLogger = Pick<Logger, 'info' | 'warn' | 'error'>;

/** Metrics sink (Powertools `Metrics` fits). */
export interface BreakerMetrics {
  addMetric(name: string, unit: 'Count', value: number): void;
  publishStoredMetrics(): void;
}

/** Collaborators and settings of {@link createBreaker}. */
export interface BreakerOptions {
  /** Lambda control plane (a `LambdaClient`; a recorded fake in tests). */
  readonly client: EventSourceMappingClient;
  /** UUID of the worker's event source mapping. */
  readonly mappingUuid: string;
  /**
   * The database-unavailable signal: resolves when the database answers the way the worker reaches it, rejects
   * otherwise. Bounded by `probeTimeoutMs`.
   */
  readonly probe: () => Promise<unknown>;
  /** A probe that has not answered after this long failed. */
  readonly probeTimeoutMs: number;
  /** The mapping's configured scaling, restored when the breaker closes. */
  readonly scaling: MappingScaling;
  /** `MaximumConcurrency` while half-open (mode `maximum-concurrency`; provisioned: 2 pollers). */
  readonly halfOpenConcurrency: number;
  readonly settings: BreakerSettings;
  readonly logger: BreakerLogger;
  readonly metrics: BreakerMetrics;
  /** Clock (epoch ms). @default Date.now */
  readonly now?: () => number;
  /**
   * The control loop of the mapping's `MaximumConcurrency` (mode `maximum-concurrency`): ticked after the breaker's
   * own step, only when the breaker is closed, not held, the mapping enabled and the step did nothing to it.
   */
  readonly fleetLimit?: FleetLimit;
}

/** What one {@link Breaker.tick} did. */
export interface BreakerTick {
  readonly state: BreakerState;
  readonly probe?: 'ok' | 'failed';
  readonly step?: BreakerStep;
  /** The Lambda control plane failed; the state is unchanged and the next tick tries again. */
  readonly error?: string;
  /** What the control loop of the `MaximumConcurrency` did, when it ran. */
  readonly concurrency?: FleetLimitTick;
}

/** A breaker over one mapping; keeps its state between ticks (one execution environment). */
export interface Breaker {
  /** Reads the mapping, probes when due, steps the state machine and applies its action to the mapping. */
  tick(): Promise<BreakerTick>;
  /** The state after the last tick; `undefined` before the first. */
  readonly state: BreakerState | undefined;
}

/**
 * The breaker's adapter around {@link stepBreaker}: per tick it reads the mapping (enabled, hold tag), probes the
 * database when due, and applies the step's action with UpdateEventSourceMapping. Every transition is logged
 * (`breaker_<status>`, with the reason) and counted ({@link BREAKER_METRICS}). The state lives in memory: the
 * deployed function has a reserved concurrency of 1, so one environment carries it from tick to tick; after a
 * cold start it is rebuilt from the mapping (disabled → open since the mapping's LastModified), which at worst
 * probes once more than the backoff would have. With a `fleetLimit` the same tick then moves the mapping's
 * `MaximumConcurrency` from the fleet's signals of load, only when the breaker is closed, not held, and did nothing
 * to the mapping itself: the breaker's decision always comes first (lambda/breaker/fleet-limit.ts).
 *
 * @example
 * ```ts
 * const breaker = createBreaker({ client: new LambdaClient({}), mappingUuid, probe: () => sql`select 1`, ... });
 * await runBreaker(breaker, { until: Date.now() + 50_000, intervalMs: 10_000 });
 * ```
 */
export function createBreaker(options: BreakerOptions): Breaker {
  const now = options.now ?? Date.now;
  const { client, mappingUuid, logger, metrics, settings } = options;
  let state: BreakerState | undefined;

  const probe = () =>
    runProbe(options.probe, options.probeTimeoutMs, (error) =>
      logger.warn('breaker_probe_failed', { mappingUuid, error: describeError(error) }),
    );

  async function apply(step: BreakerStep): Promise<void> {
    switch (step.action) {
      case 'disable':
        return disableMapping(client, mappingUuid);
      case 'half-open':
        return enableMapping(
          client,
          mappingUuid,
          halfOpenScaling(options.scaling, options.halfOpenConcurrency),
        );
      case 'restore':
        return enableMapping(client, mappingUuid, options.scaling);
      case undefined:
        return;
    }
  }

  return {
    get state() {
      return state;
    },
    async tick() {
      try {
        const mapping = await readMapping(client, mappingUuid);
        const view = { enabled: mapping.enabled, held: mapping.hold !== undefined };
        const current = state ?? initialBreakerState(view, mapping.lastModified, now(), settings.minOpenMs);
        const result = isProbeDue(current, view, now()) ? await probe() : undefined;
        const step = stepBreaker(
          current,
          { mapping: view, ...(result ? { probe: result } : {}) },
          now(),
          settings,
        );
        await apply(step);
        state = step.state;
        if (step.transition) {
          const { from, to, reason } = step.transition;
          const log = to === 'closed' ? logger.info : logger.warn;
          log.call(logger, `breaker_${to.replace('-', '_')}`, {
            mappingUuid,
            from,
            to,
            reason,
            action: step.action,
            failedProbes: step.state.failures,
            nextProbeAt: to === 'open' ? new Date(step.state.nextProbeAt).toISOString() : undefined,
            hold: mapping.hold,
          });
          metrics.addMetric(BREAKER_METRICS[to], 'Count', 1);
          metrics.publishStoredMetrics();
        }
        const steer =
          options.fleetLimit &&
          options.scaling.mode === 'maximum-concurrency' &&
          step.state.status === 'closed' &&
          step.action === undefined &&
          view.enabled &&
          !view.held;
        const concurrency = steer ? await options.fleetLimit?.tick(mapping, now()) : undefined;
        return {
          state: step.state,
          step,
          ...(result ? { probe: result } : {}),
          ...(concurrency ? { concurrency } : {}),
        };
      } catch (error) {
        // The control plane failed (throttled, no permission): keep the state, try again next tick.
        logger.error('breaker_tick_failed', { mappingUuid, error: describeError(error) });
        const unchanged = state ?? initialBreakerState({ enabled: true, held: false }, now(), now(), 0);
        return { state: unchanged, error: describeError(error) };
      }
    },
  };
}

/**
 * Ticks `breaker` every `intervalMs` until `until` (epoch ms) or until `signal` aborts: the scheduled function
 * runs it for most of its timeout so the breaker reacts within one interval, not one schedule period.
 */
export async function runBreaker(
  breaker: Breaker,
  options: { until: number; intervalMs: number; signal?: AbortSignal; now?: () => number },
): Promise<BreakerState | undefined> {
  const now = options.now ?? Date.now;
  while (!options.signal?.aborted) {
    const started = now();
    await breaker.tick();
    const wait = Math.min(options.intervalMs - (now() - started), options.until - now());
    if (now() + Math.max(wait, 0) >= options.until) break;
    if (wait > 0) {
      try {
        await sleep(wait, undefined, { signal: options.signal });
      } catch {
        break; // aborted
      }
    }
  }
  return breaker.state;
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
