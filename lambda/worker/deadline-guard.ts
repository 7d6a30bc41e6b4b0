import { WORKER_DEFAULTS } from '../constants.ts';
/**
 * Smallest guard: records are not started with less than this left before the Lambda timeout.
 *
 * @internal
 */
export const MIN_DEADLINE_GUARD_MS = WORKER_DEFAULTS.minDeadlineGuardMs;

/**
 * Tracks how long records take in this execution environment and derives the deadline guard from it:
 * `max(2 s, observed p99)` over the last 200 records. A record is started only when at least the guard
 * is left, so it can finish before the Lambda timeout instead of being cut mid-transaction.
 *
 * @internal
 */
export class DeadlineGuard {
  private readonly samples: number[] = [];
  private next = 0;
  /** The p99, recomputed every 10 samples: guardMs runs before every record, sorting 200 numbers each time adds up. */
  private cachedP99: number | undefined;
  private observed = 0;

  constructor(
    private readonly fixedMs?: number,
    private readonly size = 200,
  ) {}

  /** Adds the duration of a processed record. */
  observe(durationMs: number): void {
    if (this.samples.length < this.size) this.samples.push(durationMs);
    else this.samples[this.next] = durationMs;
    this.next = (this.next + 1) % this.size;
    this.observed += 1;
    if (this.observed <= 10 || this.observed % 10 === 0) this.cachedP99 = undefined;
  }

  /** The guard in milliseconds: the fixed value when configured, else max(2 s, p99). */
  guardMs(): number {
    if (this.fixedMs !== undefined) return this.fixedMs;
    if (this.samples.length === 0) return MIN_DEADLINE_GUARD_MS;
    if (this.cachedP99 === undefined) {
      // A typed copy sorts numerically in native code (no comparator call per comparison).
      const sorted = Float64Array.from(this.samples).sort();
      this.cachedP99 = sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] ?? 0;
    }
    return Math.max(MIN_DEADLINE_GUARD_MS, this.cachedP99);
  }
}
