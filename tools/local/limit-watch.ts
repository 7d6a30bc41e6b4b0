import type { EventSourceMapping } from './event-source-mapping.ts';
import { type LocalConcurrencyLoop, startLocalConcurrencyLoop } from './local-concurrency-loop.ts';

/** The lowest `MaximumConcurrency` (AWS's minimum, the construct's default `concurrencyFloor`). */
const MAPPING_FLOOR = 2;

/** One change of the adaptive limit: from, to, and the reason it gave. */
export interface LimitChange {
  readonly from: number;
  readonly to: number;
  readonly reason: string;
}

/** The adaptive limit of a running consumer, watched: returned by {@link watchMappingLimit} and {@link watchPollerLimit}. */
export interface LimitWatch {
  readonly ceiling: number;
  readonly floor: number;
  /** The limit now. */
  current(): number;
  /** Every change since the watch began, in order. */
  readonly changes: readonly LimitChange[];
  /** The control loop's failures (`breaker_tick_failed`, `concurrency_limit_failed`), each a line. */
  readonly errors: readonly string[];
  /** Ends the watch (on the mapping: stops the control loop; the mapping keeps its `MaximumConcurrency`). */
  stop(): Promise<void>;
}

/** The `concurrency_limit_changed` line's change, or undefined for any other line. */
export function limitChangeOf(line: string | Record<string, unknown>): LimitChange | undefined {
  let parsed: Record<string, unknown>;
  if (typeof line === 'string') {
    if (!line.includes('"concurrency_limit_changed"')) return undefined;
    try {
      parsed = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return undefined;
    }
  } else parsed = line;
  const { message, from, to, reason } = parsed;
  if (message !== 'concurrency_limit_changed' || typeof from !== 'number' || typeof to !== 'number')
    return undefined;
  return { from, to, reason: String(reason) };
}

/**
 * The Lambda runtime's limit: the breaker's control loop run locally over `esm` ({@link startLocalConcurrencyLoop}),
 * fed by `feed` with the function's output lines (its EMF metrics); the changes are the loop's log lines.
 */
export function watchMappingLimit(options: {
  readonly esm: EventSourceMapping;
  readonly probe: () => Promise<unknown>;
  readonly source: { readonly namespace: string; readonly service: string };
  /** Called with the function's line sink while the watch runs, and with undefined when it ends. */
  readonly feed: (sink: ((line: string) => void) | undefined) => void;
}): LimitWatch {
  const { esm } = options;
  const changes: LimitChange[] = [];
  const errors: string[] = [];
  const record = (message: string, extra: Record<string, unknown>) => {
    const change = limitChangeOf({ message, ...extra });
    if (change) changes.push(change);
  };
  const ceiling = esm.maxConcurrency;
  if (ceiling <= MAPPING_FLOOR) {
    // No room between AWS's floor and the ceiling: nothing to move, no loop.
    return {
      ceiling,
      floor: MAPPING_FLOOR,
      current: () => esm.maxConcurrency,
      changes,
      errors,
      stop: async () => {},
    };
  }
  const loop: LocalConcurrencyLoop = startLocalConcurrencyLoop({
    esm,
    probe: options.probe,
    floor: MAPPING_FLOOR,
    source: options.source,
    logger: {
      info: record,
      warn: record,
      error: (message: string, extra: Record<string, unknown>) => {
        errors.push(`${message}: ${String(extra.error ?? '')}`);
      },
    } as never,
    metrics: { addMetric() {}, publishStoredMetrics() {} },
  });
  options.feed((line) => loop.metricData.ingest(line));
  return {
    ceiling,
    floor: MAPPING_FLOOR,
    current: () => esm.maxConcurrency,
    changes,
    errors,
    async stop() {
      options.feed(undefined);
      await loop.stop();
    },
  };
}

/** The poller's limit as its tasks' log lines tell it, returned by {@link trackPollerLimit}. */
export interface PollerLimitTracker {
  /** Give it every line the tasks write. */
  onLine(line: string): void;
  /** A watch of the limit from now on. */
  watch(): LimitWatch;
}

/**
 * The poller's limit (its own, in the task), followed from the start through its `concurrency_limit_changed` lines:
 * a task that replaces a stopped one (`poller_started`) starts at the ceiling again.
 */
export function trackPollerLimit(options: {
  readonly ceiling: number;
  readonly floor: number;
}): PollerLimitTracker {
  let current = options.ceiling;
  let watching: LimitChange[] | undefined;
  return {
    onLine(line) {
      if (line.includes('"poller_started"')) current = options.ceiling;
      const change = limitChangeOf(line);
      if (!change) return;
      current = change.to;
      watching?.push(change);
    },
    watch() {
      const changes: LimitChange[] = [];
      watching = changes;
      return {
        ceiling: options.ceiling,
        floor: options.floor,
        current: () => current,
        changes,
        errors: [],
        async stop() {
          if (watching === changes) watching = undefined;
        },
      };
    },
  };
}
