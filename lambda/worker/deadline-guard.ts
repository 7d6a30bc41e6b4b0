import { WORKER_DEFAULTS } from '../constants.ts';

/**
 * Smallest guard: records are not started with less than this left before the Lambda timeout (unless the whole
 * budget is so short that {@link DEADLINE_GUARD_MAX_SHARE} caps it lower).
 *
 * @internal
 */
export const MIN_DEADLINE_GUARD_MS = WORKER_DEFAULTS.minDeadlineGuardMs;

/**
 * The adaptive guard never exceeds this share of the full budget: the time left for records at the start of a batch,
 * the largest this environment has seen (a fresh invocation's, about the function timeout less the margins).
 *
 * @internal
 */
export const DEADLINE_GUARD_MAX_SHARE = 0.5;

/**
 * A sample counts for this long: older ones no longer raise the guard.
 *
 * @internal
 */
export const DEADLINE_GUARD_SAMPLE_MAX_AGE_MS = 5 * 60_000;

/**
 * Failure codes of a record cut by a deadline (its own budget, a database call's, a payload read's): such a record
 * says nothing about how long a record needs, so it is never a sample.
 *
 * @internal
 */
export const DEADLINE_FAILURE_CODES: ReadonlySet<string> = new Set([
  'HANDLER_TIMEOUT',
  'DATABASE_TIMEOUT',
  'PAYLOAD_READ_TIMEOUT',
  'RECORD_UNSETTLED',
]);

/** A record that ran, as {@link DeadlineGuard.observe} takes it. */
export interface GuardSample {
  /** How long the record took (its outcome's `processingMs`). */
  readonly durationMs: number;
  /** The time it had when it started: the time left for a handler then (what the guard is compared with). */
  readonly startedLeftMs: number;
  /** Its outcome's failure code, if any. */
  readonly failureCode?: string;
}

/**
 * Tracks how long records take in this execution environment and derives the deadline guard from it. A record is
 * started only when at least the guard is left, so it can finish before the Lambda timeout instead of being cut
 * mid-transaction.
 *
 * The rule: `min(half the full budget, max(2 s, p99))`, the p99 over the last 200 records that settled within the
 * time they had and ran in the last 5 minutes. A record cut by a deadline (`HANDLER_TIMEOUT`, `DATABASE_TIMEOUT`, …,
 * or any record that used all the time it had) is not a sample: its duration is the budget it was given, not what
 * it needs, and counting it would raise the guard above what the next invocation has — every later record of the
 * environment deferred unattempted until SQS moves it to the DLQ. The cap keeps the first record of every
 * invocation started whatever the samples say (one slow success defers at most the second half of an invocation),
 * and samples age out so a burst of slow records does not defer records for the rest of the environment's life.
 *
 * Cheap on the hot path: `guardMs` runs before every record and returns a cached p99, recomputed (a native sort of at
 * most 200 numbers) every 10 samples and when its oldest sample ages out.
 *
 * @internal
 */
export class DeadlineGuard {
  private readonly durations: Float64Array;
  private readonly times: Float64Array;
  private count = 0;
  private next = 0;
  private observed = 0;
  private cachedP99: number | undefined;
  /** When the cached p99 stops holding: its oldest sample ages out. */
  private cachedUntil = Number.POSITIVE_INFINITY;
  /** The largest budget a batch started with. */
  private fullMs = 0;
  private readonly now: () => number;
  private readonly maxAgeMs: number;

  constructor(
    private readonly fixedMs?: number,
    settings: { readonly size?: number; readonly maxAgeMs?: number; readonly now?: () => number } = {},
  ) {
    const size = settings.size ?? 200;
    this.durations = new Float64Array(size);
    this.times = new Float64Array(size);
    this.maxAgeMs = settings.maxAgeMs ?? DEADLINE_GUARD_SAMPLE_MAX_AGE_MS;
    this.now = settings.now ?? Date.now;
  }

  /** A batch starts with `leftMs` for its records' handlers: the largest is the full budget. */
  noteBudget(leftMs: number): void {
    if (leftMs > this.fullMs) this.fullMs = leftMs;
  }

  /** Adds a record that ran; one cut by a deadline, or that used all its time, is left out. */
  observe(sample: GuardSample): void {
    if (sample.failureCode !== undefined && DEADLINE_FAILURE_CODES.has(sample.failureCode)) return;
    if (sample.durationMs >= sample.startedLeftMs) return;
    this.durations[this.next] = sample.durationMs;
    this.times[this.next] = this.now();
    this.next = (this.next + 1) % this.durations.length;
    this.count = Math.min(this.count + 1, this.durations.length);
    this.observed += 1;
    if (this.observed <= 10 || this.observed % 10 === 0) this.cachedP99 = undefined;
  }

  /** The guard in milliseconds: the fixed value when configured, else the rule above. */
  guardMs(): number {
    if (this.fixedMs !== undefined) return this.fixedMs;
    const adaptive = Math.max(MIN_DEADLINE_GUARD_MS, this.p99());
    return this.fullMs > 0
      ? Math.min(Math.floor(this.fullMs * DEADLINE_GUARD_MAX_SHARE), adaptive)
      : adaptive;
  }

  private p99(): number {
    const now = this.now();
    if (this.cachedP99 !== undefined && now < this.cachedUntil) return this.cachedP99;
    const cutoff = now - this.maxAgeMs;
    const live: number[] = [];
    let oldest = Number.POSITIVE_INFINITY;
    for (let i = 0; i < this.count; i += 1) {
      const at = this.times[i] as number;
      if (at < cutoff) continue;
      live.push(this.durations[i] as number);
      if (at < oldest) oldest = at;
    }
    // A typed copy sorts numerically in native code (no comparator call per comparison).
    const sorted = Float64Array.from(live).sort();
    this.cachedP99 =
      sorted.length === 0
        ? 0
        : (sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] ?? 0);
    this.cachedUntil = oldest + this.maxAgeMs;
    return this.cachedP99;
  }
}
