import { setTimeout as sleep } from 'node:timers/promises';
import {
  type BreakerSettings,
  type BreakerState,
  type BreakerStatus,
  type BreakerTransition,
  initialBreakerState,
  stepBreaker,
} from '../../breaker/breaker-state.ts';
import { runProbe } from '../../breaker/run-probe.ts';
import { METRIC_NAMES } from '../../constants.ts';
import { describeError, type PollerLogger, type PollerMetrics } from './poller-telemetry.ts';

/** Timings of the pause, in milliseconds. */
export interface DatabasePauseSettings {
  /** The shortest pause, and the wait after the first failed probe; doubles with each further one. */
  readonly probeBackoffBaseMs: number;
  /** The longest wait between two probes. */
  readonly probeBackoffMaxMs: number;
  /** After a good probe, one record at a time for this long (with a probe every `probeBackoffBaseMs`). */
  readonly halfOpenMs: number;
  /** A probe without an answer after this long failed. */
  readonly probeTimeoutMs: number;
}

/** Collaborators and settings of {@link createDatabasePause}. */
export interface DatabasePauseOptions {
  /** Resolves when the database answers the way the worker reaches it (`createDatabaseProbe`). */
  readonly probe: () => Promise<unknown>;
  readonly settings: DatabasePauseSettings;
  readonly logger: PollerLogger;
  readonly metrics: PollerMetrics;
  /** Called on every change of status, after it is logged. */
  readonly onChange?: (transition: BreakerTransition) => void;
  /** Clock (epoch ms). @default Date.now */
  readonly now?: () => number;
}

/** The poller's view of the database, returned by {@link createDatabasePause}. */
export interface DatabasePause {
  /** `closed`: receiving; `open`: paused, probing with backoff; `half-open`: receiving one record at a time. */
  readonly status: BreakerStatus;
  /** Probes run so far. */
  readonly probes: number;
  /** A batch settled; `databaseDown` is its connection-class failure signal. */
  observe(databaseDown: boolean): void;
  /** Resolves once the poller may receive (status not `open`), or when `signal` aborts. */
  whenReceiving(signal: AbortSignal): Promise<void>;
  /** Stops probing (the poller stops). */
  close(): void;
}

/**
 * The poller's database-health pause, on the same decision module as the event source mapping's circuit breaker
 * (`lambda/breaker/breaker-state.ts`, `stepBreaker`): "the mapping is enabled" reads "the poller receives".
 *
 * - **closed**: receiving; every settled batch is an observation, and one batch with a connection-class failure
 *   (`databaseDown`) opens it at once (failure threshold 1: the batch already failed fast on it).
 * - **open**: not receiving; the database is probed after `probeBackoffBaseMs`, then with the breaker's doubling
 *   backoff up to `probeBackoffMaxMs`. Batch results do not count here: only probes reopen the door.
 * - **half-open**: a probe succeeded; the poller receives one record at a time, probing every
 *   `probeBackoffBaseMs`; a failed probe or batch opens it again, and `halfOpenMs` of good probes close it.
 *
 * Every change is logged (`poller_paused`, `poller_half_open`, `poller_resumed`, with the reason) and published as
 * the `PollerPaused` metric (1 while open, 0 otherwise).
 *
 * @internal
 */
export function createDatabasePause(options: DatabasePauseOptions): DatabasePause {
  const now = options.now ?? Date.now;
  const { settings, logger, metrics } = options;
  const breakerSettings: BreakerSettings = {
    failureThreshold: 1,
    minOpenMs: settings.probeBackoffBaseMs,
    probeBackoffBaseMs: settings.probeBackoffBaseMs,
    probeBackoffMaxMs: settings.probeBackoffMaxMs,
    halfOpenMs: settings.halfOpenMs,
  };
  let state: BreakerState = initialBreakerState({ enabled: true, held: false }, now(), now(), 0);
  let probes = 0;
  let watching: Promise<void> | undefined;
  const closing = new AbortController();
  const waiters = new Set<() => void>();

  function step(result: 'ok' | 'failed'): void {
    const next = stepBreaker(
      state,
      { mapping: { enabled: state.status !== 'open', held: false }, probe: result },
      now(),
      breakerSettings,
    );
    state = next.state;
    if (!next.transition) return;
    const { from, to, reason } = next.transition;
    const message = { open: 'poller_paused', 'half-open': 'poller_half_open', closed: 'poller_resumed' }[to];
    (to === 'open' ? logger.warn : logger.info).call(logger, message, {
      from,
      to,
      reason,
      failedProbes: state.failures,
      nextProbeAt: to === 'open' ? new Date(state.nextProbeAt).toISOString() : undefined,
    });
    metrics.addMetric(METRIC_NAMES.pollerPaused, 'Count', to === 'open' ? 1 : 0);
    metrics.publishStoredMetrics();
    options.onChange?.(next.transition);
    if (to !== 'open') for (const resolve of [...waiters]) resolve();
    if (to !== 'closed') watching ??= watch().finally(() => (watching = undefined));
  }

  async function probeOnce(): Promise<'ok' | 'failed'> {
    probes += 1;
    return runProbe(options.probe, settings.probeTimeoutMs, (error) =>
      logger.warn('poller_probe_failed', { error: describeError(error) }),
    );
  }

  /** Probes while not closed: when due while open, every `probeBackoffBaseMs` while half-open. */
  async function watch(): Promise<void> {
    while (state.status !== 'closed' && !closing.signal.aborted) {
      const wait =
        state.status === 'open' ? Math.max(0, state.nextProbeAt - now()) : settings.probeBackoffBaseMs;
      try {
        await sleep(wait, undefined, { signal: closing.signal });
      } catch {
        return; // closed
      }
      const result = await probeOnce();
      if (closing.signal.aborted) return;
      step(result);
    }
  }

  return {
    get status() {
      return state.status;
    },
    get probes() {
      return probes;
    },
    observe(databaseDown) {
      if (state.status === 'open') return; // only probes decide while paused
      if (databaseDown || state.status === 'half-open') step(databaseDown ? 'failed' : 'ok');
      else if (state.failures > 0) step('ok');
    },
    whenReceiving(signal) {
      if (state.status !== 'open' || signal.aborted) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const done = () => {
          waiters.delete(done);
          signal.removeEventListener('abort', done);
          resolve();
        };
        waiters.add(done);
        signal.addEventListener('abort', done, { once: true });
      });
    },
    close() {
      closing.abort();
      for (const resolve of [...waiters]) resolve();
    },
  };
}
