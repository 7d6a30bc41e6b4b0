import { UsageError } from './errors.ts';

/** The periods `queue trend` reads: whole periods, aligned to the period, ending at the last complete one. */
export interface TrendWindow {
  /** Start of the first period (inclusive). */
  readonly start: Date;
  /** End of the last period (exclusive): the start of the period in progress, which is left out. */
  readonly end: Date;
  readonly periodSeconds: number;
  /** Start of each period, oldest first. */
  readonly periods: readonly Date[];
}

/** Fewest periods a trend compares: the last quarter of them (at least one) against the others. */
export const MIN_TREND_PERIODS = 4;
/** Most periods a trend reads (a day of 5-minute periods). */
export const MAX_TREND_PERIODS = 288;

/**
 * The window of `queue trend --since <since> --period <period>` at `now`: periods aligned to multiples of the period
 * (as CloudWatch aligns its datapoints), the period in progress left out (a partial period would read as a fall), as
 * many as cover `since` (rounded up).
 *
 * @throws UsageError when the period is not a whole number of minutes (CloudWatch's standard resolution), or the
 * window holds fewer than {@link MIN_TREND_PERIODS} or more than {@link MAX_TREND_PERIODS} periods.
 */
export function trendWindow(now: Date, sinceSeconds: number, periodSeconds: number): TrendWindow {
  if (periodSeconds < 60 || periodSeconds % 60 !== 0) {
    throw new UsageError(
      `--period must be a whole number of minutes, at least 1m (given ${periodSeconds}s): CloudWatch's SQS metrics have 1-minute resolution`,
    );
  }
  const count = Math.ceil(sinceSeconds / periodSeconds);
  if (count < MIN_TREND_PERIODS || count > MAX_TREND_PERIODS) {
    throw new UsageError(
      `--since must cover ${MIN_TREND_PERIODS} to ${MAX_TREND_PERIODS} periods of --period (given ${sinceSeconds}s / ${periodSeconds}s = ${count}); ` +
        `e.g. --since 1h --period 5m`,
    );
  }
  const periodMs = periodSeconds * 1000;
  const endMs = Math.floor(now.getTime() / periodMs) * periodMs;
  const startMs = endMs - count * periodMs;
  return {
    start: new Date(startMs),
    end: new Date(endMs),
    periodSeconds,
    periods: Array.from({ length: count }, (_, i) => new Date(startMs + i * periodMs)),
  };
}

/** The index of the period of `window` that holds `at`, or -1 when `at` is outside the window. */
export function periodIndex(window: TrendWindow, at: Date | number): number {
  const ms = typeof at === 'number' ? at : at.getTime();
  if (!(ms >= window.start.getTime() && ms < window.end.getTime())) return -1;
  return Math.floor((ms - window.start.getTime()) / (window.periodSeconds * 1000));
}
