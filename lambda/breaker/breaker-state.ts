/**
 * The circuit breaker of the event source mapping, as a pure state machine: no I/O, no clock of its own (every
 * function takes `now` in epoch milliseconds), so each transition is a unit test.
 *
 * ```
 *            failureThreshold failed probes in a row
 *   closed ──────────────────────────────────────────► open ◄────────────┐
 *     ▲                                                 │ probe ok once  │ probe failed
 *     │ halfOpenMs of ok probes                          ▼ it is due      │
 *     └──────────────────────────────────────────── half-open ───────────┘
 * ```
 *
 * - **closed**: the mapping runs at its configured scaling; every tick probes the database.
 * - **open**: the mapping is disabled, so Lambda stops receiving and no receive count grows. The first probe is
 *   due `minOpenMs` after opening, later ones back off (`probeBackoffBaseMs` doubling up to `probeBackoffMaxMs`),
 *   and the count of failed probes carries over a half-open that fails, so a flapping database is probed less
 *   and less often.
 * - **half-open**: the mapping is enabled with a low concurrency; a failed probe opens it again at once, and after
 *   `halfOpenMs` of good probes the configured scaling is restored.
 * - **held**: an operator opened the breaker (`sqs-worker breaker open`); it stays open, unprobed, until the
 *   operator closes it. The hold is read from the mapping on every tick, so it wins over any automatic decision.
 *
 * The mapping itself is the truth: a mapping found disabled that the breaker did not disable (a cold start, the
 * console) is taken as open, one found enabled while open (a deploy, `sqs-worker breaker close`) as closed.
 *
 * The long-running poller's database-health pause (`lambda/runtimes/poller/database-pause.ts`) steps this same machine, with
 * "the mapping is enabled" read as "the poller receives" and a failed batch or probe as a failed probe: one decision
 * module for both runtimes.
 */

/** Where the breaker stands. */
export type BreakerStatus = 'closed' | 'open' | 'half-open';

/** The breaker's memory between ticks. */
export interface BreakerState {
  readonly status: BreakerStatus;
  /** When the current status began (epoch ms). */
  readonly since: number;
  /** Closed: failed probes in a row. Open and half-open: failed probes since the breaker opened (the backoff). */
  readonly failures: number;
  /** Open: no probe before this time (epoch ms). */
  readonly nextProbeAt: number;
  /** Open by an operator: never probed nor closed automatically. */
  readonly held: boolean;
}

/** Timings and thresholds of the breaker; all durations in milliseconds. */
export interface BreakerSettings {
  /** Failed probes in a row that open the breaker (one failed probe can be a blip). */
  readonly failureThreshold: number;
  /** The breaker stays open at least this long before its first probe. */
  readonly minOpenMs: number;
  /** Wait after the first failed probe while open; doubles with each further one. */
  readonly probeBackoffBaseMs: number;
  /** The longest wait between two probes while open. */
  readonly probeBackoffMaxMs: number;
  /** How long half-open must see good probes before the configured scaling is restored. */
  readonly halfOpenMs: number;
}

/** What the mapping looks like at this tick. */
export interface MappingView {
  /** The mapping is enabled (or being enabled). */
  readonly enabled: boolean;
  /** An operator holds the breaker open. */
  readonly held: boolean;
}

/** What the breaker saw at this tick: the mapping, and the probe result when a probe was due. */
export interface BreakerObservation {
  readonly mapping: MappingView;
  /** `undefined` when no probe was due ({@link isProbeDue}). */
  readonly probe?: 'ok' | 'failed';
}

/**
 * What to do to the mapping: `disable` (Enabled=false), `half-open` (Enabled=true with the low concurrency),
 * `restore` (Enabled=true with the configured scaling).
 */
export type BreakerAction = 'disable' | 'half-open' | 'restore';

/** A change of status, to log and to publish as a metric. */
export interface BreakerTransition {
  readonly from: BreakerStatus;
  readonly to: BreakerStatus;
  readonly reason: string;
}

/** Result of {@link stepBreaker}. */
export interface BreakerStep {
  readonly state: BreakerState;
  readonly action?: BreakerAction;
  readonly transition?: BreakerTransition;
}

/**
 * The state of a breaker meeting a mapping for the first time (a cold start): closed if it is enabled, else
 * open since `since` (the mapping's LastModified), first probe once `minOpenMs` has passed since then.
 */
export function initialBreakerState(
  mapping: MappingView,
  since: number,
  now: number,
  minOpenMs: number,
): BreakerState {
  if (mapping.enabled && !mapping.held) {
    return { status: 'closed', since: now, failures: 0, nextProbeAt: now, held: false };
  }
  return {
    status: 'open',
    since,
    failures: 0,
    nextProbeAt: Math.max(now, since + minOpenMs),
    held: mapping.held,
  };
}

/** True when this tick should probe the database: always unless open, and open only once the backoff is over. */
export function isProbeDue(state: BreakerState, mapping: MappingView, now: number): boolean {
  if (mapping.held) return false;
  if (state.held) return true; // the hold was just released: look before deciding
  return state.status !== 'open' || now >= state.nextProbeAt;
}

/** The wait before the next probe after `failures` failed probes while open. */
export function probeBackoffMs(failures: number, settings: BreakerSettings): number {
  if (failures <= 0) return 0;
  const exponent = Math.min(failures - 1, 30);
  return Math.min(settings.probeBackoffMaxMs, settings.probeBackoffBaseMs * 2 ** exponent);
}

/**
 * One tick of the breaker: the next state, what to do to the mapping, and the transition to report. Pure.
 *
 * @example
 * ```ts
 * const step = stepBreaker(state, { mapping: { enabled: true, held: false }, probe: 'failed' }, Date.now(), settings);
 * if (step.action === 'disable') await disableMapping();
 * ```
 */
export function stepBreaker(
  state: BreakerState,
  observation: BreakerObservation,
  now: number,
  settings: BreakerSettings,
): BreakerStep {
  const { mapping, probe } = observation;
  const open = (failures: number, reason: string, held = false): BreakerStep => ({
    state: {
      status: 'open',
      since: now,
      failures,
      nextProbeAt: now + Math.max(settings.minOpenMs, probeBackoffMs(failures, settings)),
      held,
    },
    ...(mapping.enabled ? { action: 'disable' as const } : {}),
    transition: { from: state.status, to: 'open', reason },
  });
  const closed = (reason: string, action?: BreakerAction): BreakerStep => ({
    state: { status: 'closed', since: now, failures: 0, nextProbeAt: now, held: false },
    ...(action ? { action } : {}),
    transition: { from: state.status, to: 'closed', reason },
  });

  // An operator's hold wins over everything.
  if (mapping.held) {
    if (state.status === 'open' && state.held) {
      return { state, ...(mapping.enabled ? { action: 'disable' as const } : {}) };
    }
    return open(state.failures, 'held open by an operator', true);
  }
  if (state.held) {
    // The hold was released (`sqs-worker breaker close` enables the mapping at its configured scaling).
    // The configured scaling is restored, whatever it was when the hold began (a half-open one, say).
    if (mapping.enabled) return closed('hold released by an operator', 'restore');
    return { state: { ...state, held: false, nextProbeAt: now } };
  }

  // The mapping was changed behind the breaker's back: follow it.
  if (state.status === 'closed' && !mapping.enabled) {
    return {
      state: { status: 'open', since: now, failures: 0, nextProbeAt: now + settings.minOpenMs, held: false },
      transition: { from: 'closed', to: 'open', reason: 'mapping found disabled outside the breaker' },
    };
  }
  if (state.status === 'open' && mapping.enabled) {
    return closed('mapping found enabled outside the breaker');
  }

  switch (state.status) {
    case 'closed': {
      if (probe === 'ok') return { state: { ...state, failures: 0 } };
      if (probe !== 'failed') return { state };
      const failures = state.failures + 1;
      if (failures < settings.failureThreshold) return { state: { ...state, failures } };
      return open(0, `database unavailable: ${failures} failed probe(s) in a row`);
    }
    case 'open': {
      if (probe === 'ok') {
        return {
          state: { status: 'half-open', since: now, failures: state.failures, nextProbeAt: now, held: false },
          action: 'half-open',
          transition: { from: 'open', to: 'half-open', reason: 'database probe succeeded' },
        };
      }
      if (probe !== 'failed') return { state };
      const failures = state.failures + 1;
      return {
        state: {
          ...state,
          failures,
          nextProbeAt: Math.max(state.since + settings.minOpenMs, now + probeBackoffMs(failures, settings)),
        },
      };
    }
    case 'half-open': {
      if (!mapping.enabled) return open(state.failures, 'mapping found disabled while half-open');
      if (probe === 'failed') return open(state.failures + 1, 'database probe failed while half-open');
      if (probe === 'ok' && now - state.since >= settings.halfOpenMs) {
        return closed('database healthy through the half-open period', 'restore');
      }
      return { state };
    }
  }
}
