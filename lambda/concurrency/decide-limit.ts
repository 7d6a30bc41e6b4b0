/**
 * The bounds and the gains of an adaptive limit of records in flight: AIMD (additive increase, multiplicative
 * decrease, the shape of Netflix concurrency-limits' `AIMDLimit` and of TCP Reno) on the store's signals of load,
 * plus a latency check against a moving baseline of the transaction time (the idea of its gradient limiters).
 */
export interface LimitSettings {
  /** The lowest limit (≥ 1): the worker never stops on its own, the breaker does. */
  readonly floor: number;
  /** The highest limit: the capacity-derived ceiling (`POLLER_CONCURRENCY`, the mapping's `MaximumConcurrency`). */
  readonly ceiling: number;
  /**
   * The share of a window's database-bound records (completed or failed on the database) that are signals of load
   * from which the limit is cut. @default 0.05
   */
  readonly overloadRate?: number;
  /** The cut: the limit is multiplied by it (and lowered by at least 1). @default 0.75 */
  readonly backoffRatio?: number;
  /** The median transaction time above which a window is slow, as a multiple of the baseline. @default 2 */
  readonly latencyTolerance?: number;
  /**
   * How far above the baseline (ms) the median must also be for a window to be slow: a few milliseconds' swing of a
   * fast workload (a busy host, a GC pause) is not the database struggling. @default 20
   */
  readonly latencyMarginMs?: number;
}

/** What happened in one window of records: the counts of each signal of load, and the transaction times. */
export interface WindowSignals {
  /** Records whose transaction ran (completed, duplicate, stale version). */
  readonly ok: number;
  readonly contention: number;
  readonly throttle: number;
  readonly unavailable: number;
  readonly slow: number;
  /** Median transaction time of the `ok` records, in ms (undefined without any). */
  readonly medianTransactionMs?: number;
  /**
   * The most records in flight at once during the window: the limit grows only when the window used it (a worker
   * that never reaches its limit learns nothing about a higher one). Undefined: not known (the Lambda fleet).
   */
  readonly peakInFlight?: number;
  /**
   * The database's own signals over the window, as the health job reads them (the Lambda fleet's loop): the most
   * sessions waiting for a lock, the deadlocks, the most long transactions holding a toolkit table's lock. Any of
   * them above 0 holds the limit where it would rise (the database is busy with something the worker's records may
   * not show); they never cut it, the worker's own signals do. Undefined: not read (the poller).
   */
  readonly database?: DatabaseSignals;
}

/** The health job's figures of a window ({@link WindowSignals.database}). */
export interface DatabaseSignals {
  readonly lockWaits: number;
  readonly deadlocks: number;
  readonly longTransactions: number;
}

/** The limit before a window, and what earlier windows taught. */
export interface LimitState {
  readonly limit: number;
  /** The transaction-time baseline learnt so far (ms). */
  readonly baselineMs?: number;
  /**
   * Where a recovery doubles up to (TCP's slow-start threshold): the limit the first cut of a run of cuts left. Below
   * it a quiet window doubles the limit, above it adds 1; undefined (no cut yet, or the Lambda fleet's loop, which
   * keeps no such memory) adds 1 throughout.
   */
  readonly recoverTo?: number;
}

/** The limit after a window, why, and the baseline to keep. */
export interface LimitDecision extends LimitState {
  readonly change: 'decrease' | 'increase' | 'hold';
  /** One line for the log (`concurrency_limit_changed`): the counts or times that decided it. */
  readonly reason: string;
}

const DEFAULTS = {
  overloadRate: 0.05,
  backoffRatio: 0.75,
  latencyTolerance: 2,
  latencyMarginMs: 20,
} as const;

/** The baseline after a window that was not overloaded: down quickly, up slowly (a slower workload is learnt). */
function nextBaseline(baselineMs: number | undefined, medianMs: number | undefined): number | undefined {
  if (medianMs === undefined) return baselineMs;
  if (baselineMs === undefined) return medianMs;
  return medianMs < baselineMs ? (baselineMs + medianMs) / 2 : baselineMs * 0.95 + medianMs * 0.05;
}

/** Why the database's own signals hold a rise, or undefined when they show nothing (or were not read). */
function databaseBusy(database: DatabaseSignals | undefined): string | undefined {
  if (!database) return undefined;
  const { lockWaits, deadlocks, longTransactions } = database;
  if (lockWaits <= 0 && deadlocks <= 0 && longTransactions <= 0) return undefined;
  return `no signal of load in the worker's records, but the database shows ${lockWaits} lock waits, ${deadlocks} deadlocks, ${longTransactions} long transactions (the health job): not raised`;
}

/**
 * The next limit of records in flight after one window, between `settings.floor` and `settings.ceiling`:
 * - cut (× `backoffRatio`, at least 1 lower) when the signals of load reach `overloadRate` of the window's
 *   database-bound records, or when its median transaction time reaches `latencyTolerance` × the baseline (and
 *   `latencyMarginMs` above it);
 * - raised after a window without either that used the limit: doubled while below {@link LimitState.recoverTo}
 *   (the limit the first of a run of cuts left), by 1 above it — unless the database's own signals
 *   ({@link WindowSignals.database}) show lock waits, deadlocks or long transactions: then held;
 * - held otherwise (no database-bound record: business failures and payload errors never move it).
 * Pure: the poller calls it per window of its own records, the Lambda control loop per window of the fleet's metrics.
 */
export function decideLimit(
  state: LimitState,
  window: WindowSignals,
  settings: LimitSettings,
): LimitDecision {
  const { overloadRate, backoffRatio, latencyTolerance, latencyMarginMs } = { ...DEFAULTS, ...settings };
  const floor = Math.max(1, Math.floor(settings.floor));
  const ceiling = Math.max(floor, Math.floor(settings.ceiling));
  const limit = Math.min(ceiling, Math.max(floor, Math.floor(state.limit)));
  const overload = window.contention + window.throttle + window.unavailable + window.slow;
  const bound = window.ok + overload;
  const memory = (baselineMs: number | undefined, recoverTo: number | undefined) => ({
    ...(baselineMs === undefined ? {} : { baselineMs }),
    ...(recoverTo === undefined ? {} : { recoverTo }),
  });
  const cut = (reason: string, baselineMs: number | undefined): LimitDecision => {
    const next = Math.max(floor, Math.min(limit - 1, Math.floor(limit * backoffRatio)));
    // A run of cuts keeps the first one's result as where a recovery doubles up to.
    const recoverTo = Math.max(state.recoverTo ?? 0, next);
    return next < limit
      ? { limit: next, change: 'decrease', reason, ...memory(baselineMs, recoverTo) }
      : {
          limit,
          change: 'hold',
          reason: `${reason}; at the floor (${floor})`,
          ...memory(baselineMs, state.recoverTo),
        };
  };
  if (overload > 0 && overload >= overloadRate * bound) {
    return cut(
      `${overload} of ${bound} database-bound records were signals of load (contention ${window.contention}, throttle ${window.throttle}, unavailable ${window.unavailable}, slow ${window.slow})`,
      state.baselineMs,
    );
  }
  const baselineMs = nextBaseline(state.baselineMs, window.medianTransactionMs);
  const median = window.medianTransactionMs;
  if (
    median !== undefined &&
    state.baselineMs !== undefined &&
    median >= latencyTolerance * state.baselineMs &&
    median >= state.baselineMs + latencyMarginMs
  ) {
    return cut(
      `median transaction ${median.toFixed(0)} ms, ${(median / state.baselineMs).toFixed(1)}× the baseline ${state.baselineMs.toFixed(0)} ms`,
      baselineMs,
    );
  }
  if (bound === 0) {
    return {
      limit,
      change: 'hold',
      reason: 'no database-bound record',
      ...memory(baselineMs, state.recoverTo),
    };
  }
  const used = window.peakInFlight === undefined || window.peakInFlight >= limit;
  const busy = databaseBusy(window.database);
  if (limit < ceiling && used && busy) {
    return { limit, change: 'hold', reason: busy, ...memory(baselineMs, state.recoverTo) };
  }
  if (limit < ceiling && used) {
    const below = state.recoverTo !== undefined && limit < state.recoverTo;
    const next = below ? Math.min(state.recoverTo ?? ceiling, limit * 2) : limit + 1;
    const recoverTo = below && next < (state.recoverTo ?? 0) ? state.recoverTo : undefined;
    return {
      limit: Math.min(ceiling, next),
      change: 'increase',
      reason: below
        ? `no signal of load in ${bound} database-bound records; doubling back toward ${state.recoverTo}`
        : `no signal of load in ${bound} database-bound records`,
      ...memory(baselineMs, recoverTo),
    };
  }
  return {
    limit,
    change: 'hold',
    reason:
      limit >= ceiling ? `at the ceiling (${ceiling})` : `the window used ${window.peakInFlight} of ${limit}`,
    ...memory(baselineMs, state.recoverTo),
  };
}
