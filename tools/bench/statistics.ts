/**
 * The `p`-th percentile (0–100) of `values` by the nearest-rank method: the smallest value such that at
 * least `p` % of the values are less than or equal to it. `NaN` for an empty list.
 *
 * @example
 * ```ts
 * percentile([4, 1, 3, 2], 50); // 2
 * ```
 */
export function percentile(values: readonly number[], p: number): number {
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile must be from 0 to 100 (given ${p})`);
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] as number;
}

/** The median of `values` (mean of the two middle values for an even count); `NaN` for an empty list. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** `value / baseline` as `1.23×`, or `–` when either side is missing or the baseline is 0. */
export function formatRatio(value: number, baseline: number): string {
  if (!Number.isFinite(value) || !Number.isFinite(baseline) || baseline === 0) return '–';
  return `${(value / baseline).toFixed(2)}×`;
}

/** Milliseconds with a precision that suits their size: `0.412 ms`, `4.12 ms`, `41.2 ms`, `412 ms`. */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return '–';
  if (ms < 1) return `${ms.toFixed(3)} ms`;
  if (ms < 10) return `${ms.toFixed(2)} ms`;
  if (ms < 100) return `${ms.toFixed(1)} ms`;
  return `${Math.round(ms)} ms`;
}

/** A byte count in KiB with one decimal: `412.3 KiB`. */
export function formatKiB(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KiB`;
}

/** `met` or `MISSED` for a target check, to print beside the figure. */
export function verdict(met: boolean): string {
  return met ? 'met' : 'MISSED';
}
