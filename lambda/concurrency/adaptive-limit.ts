import type { OutcomeResult } from '../worker/outcome.ts';
import { decideLimit, type LimitDecision, type LimitSettings, type WindowSignals } from './decide-limit.ts';
import { type LoadSignal, loadSignalOf } from './load-signal.ts';

/** Settings of an {@link AdaptiveLimit}: the limit's bounds and gains, and its window. */
export interface AdaptiveLimitSettings extends LimitSettings {
  /** The limit to start at. @default the ceiling */
  readonly initial?: number;
  /** A window closes at the first settled record this long after it opened. @default 1000 */
  readonly windowMs?: number;
}

/** A change of the limit: from, to, and the window's reason. */
export interface LimitChange {
  readonly from: number;
  readonly to: number;
  readonly reason: string;
}

/** The facts of one settled record the limit reads (a `RecordOutcome` has them). */
export interface SettledRecord {
  readonly result: OutcomeResult;
  readonly failureCode?: string;
  readonly dbTransactionMs: number;
}

const median = (values: number[]): number | undefined => {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
};

/**
 * The adaptive limit of records in flight of one worker process (the poller): the records it settles are counted by
 * their {@link loadSignalOf}, and each window ({@link AdaptiveLimitSettings.windowMs}) ends in {@link decideLimit}.
 * Between windows the limit stays put, so a burst of failures cuts it once per window, not once per record.
 */
export class AdaptiveLimit {
  #limit: number;
  #baselineMs: number | undefined;
  #recoverTo: number | undefined;
  #opened: number;
  #counts: Record<Exclude<LoadSignal, 'ignored'>, number> = this.#emptyCounts();
  #times: number[] = [];
  #peakInFlight = 0;
  #inFlight = 0;
  readonly #settings: AdaptiveLimitSettings;
  readonly #now: () => number;
  readonly #onChange: ((change: LimitChange) => void) | undefined;

  constructor(
    settings: AdaptiveLimitSettings,
    options: { readonly now?: () => number; readonly onChange?: (change: LimitChange) => void } = {},
  ) {
    if (!(settings.floor >= 1 && settings.ceiling >= settings.floor)) {
      throw new RangeError(
        `adaptive limit: floor ${settings.floor} and ceiling ${settings.ceiling} must satisfy 1 ≤ floor ≤ ceiling`,
      );
    }
    this.#settings = settings;
    this.#now = options.now ?? Date.now;
    this.#onChange = options.onChange;
    this.#limit = Math.min(settings.ceiling, Math.max(settings.floor, settings.initial ?? settings.ceiling));
    this.#opened = this.#now();
  }

  /** The records allowed in flight now. */
  get limit(): number {
    return this.#limit;
  }

  /** The transaction-time baseline learnt so far (ms), if any. */
  get baselineMs(): number | undefined {
    return this.#baselineMs;
  }

  /** Notes the records in flight (after a dispatch): the window's peak decides whether the limit may grow. */
  noteInFlight(inFlight: number): void {
    this.#inFlight = inFlight;
    this.#peakInFlight = Math.max(this.#peakInFlight, inFlight);
  }

  /** Counts one settled record; closes the window when it is due, and returns its decision then. */
  observe(record: SettledRecord): LimitDecision | undefined {
    const signal = loadSignalOf(record);
    if (signal !== 'ignored') this.#counts[signal] += 1;
    if (signal === 'ok') this.#times.push(record.dbTransactionMs);
    if (this.#now() - this.#opened < (this.#settings.windowMs ?? 1000)) return undefined;
    return this.#close();
  }

  #close(): LimitDecision {
    const window: WindowSignals = {
      ...this.#counts,
      peakInFlight: this.#peakInFlight,
      ...(this.#times.length ? { medianTransactionMs: median(this.#times) } : {}),
    };
    const state = {
      limit: this.#limit,
      ...(this.#baselineMs === undefined ? {} : { baselineMs: this.#baselineMs }),
      ...(this.#recoverTo === undefined ? {} : { recoverTo: this.#recoverTo }),
    };
    const decision = decideLimit(state, window, this.#settings);
    const from = this.#limit;
    this.#limit = decision.limit;
    this.#baselineMs = decision.baselineMs;
    this.#recoverTo = decision.recoverTo;
    this.#counts = this.#emptyCounts();
    this.#times = [];
    this.#peakInFlight = this.#inFlight;
    this.#opened = this.#now();
    if (decision.limit !== from) this.#onChange?.({ from, to: decision.limit, reason: decision.reason });
    return decision;
  }

  #emptyCounts(): Record<Exclude<LoadSignal, 'ignored'>, number> {
    return { ok: 0, contention: 0, throttle: 0, unavailable: 0, slow: 0 };
  }
}
