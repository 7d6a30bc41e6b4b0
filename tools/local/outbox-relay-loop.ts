import { setTimeout as sleep } from 'node:timers/promises';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import {
  type RelayOutboxOptions,
  type RelayOutboxResult,
  relayOutbox,
} from '../../lambda/outbox/relay-outbox.ts';

/** Options of {@link runOutboxRelayLoop}: the relay's options without `deadline`, plus the loop's own. */
export interface OutboxRelayLoopOptions extends Omit<RelayOutboxOptions, 'deadline' | 'metrics'> {
  /** Stops the loop (after the current run finishes). */
  readonly signal: AbortSignal;
  /** Pause after a run that found no work or could not send, in ms. @default 250 */
  readonly idleMs?: number;
  /** Time budget of one run (as a Lambda invocation would have), in ms. @default 10000 */
  readonly runMs?: number;
  /** Pause after a run that threw (database down), in ms. @default 2000 */
  readonly errorBackoffMs?: number;
  /** Powertools Metrics; published after every run when given. */
  readonly metrics?: Pick<Metrics, 'addMetric' | 'publishStoredMetrics'>;
  /** Called after every run, e.g. to print progress. */
  readonly onRun?: (result: RelayOutboxResult) => void;
}

/** Totals of a {@link runOutboxRelayLoop}. */
export interface OutboxRelayLoopResult {
  readonly runs: number;
  readonly published: number;
  readonly failed: number;
  readonly errors: number;
}

/**
 * Runs the outbox relay again and again until `signal` aborts — the local stand-in for the scheduled relay
 * Lambda that `npm start` uses. Each run is the same `relayOutbox` as deployed, with a `runMs` deadline; the
 * loop pauses `idleMs` when a run found nothing to do, and `errorBackoffMs` after an error (logged, never
 * fatal: the next run retries).
 *
 * @example
 * ```ts
 * const stop = new AbortController();
 * const loop = runOutboxRelayLoop({ sql, sqs: sqsClient, queueUrl, logger, signal: stop.signal });
 * process.once('SIGINT', () => stop.abort());
 * await loop;
 * ```
 */
export async function runOutboxRelayLoop(options: OutboxRelayLoopOptions): Promise<OutboxRelayLoopResult> {
  const { signal, metrics, onRun, ...relayOptions } = options;
  const idleMs = options.idleMs ?? 250;
  const runMs = options.runMs ?? 10_000;
  const errorBackoffMs = options.errorBackoffMs ?? 2000;
  const clock = options.clock ?? (() => new Date());
  const totals = { runs: 0, published: 0, failed: 0, errors: 0 };

  while (!signal.aborted) {
    let pauseMs = 0;
    try {
      const result = await relayOutbox({ ...relayOptions, metrics, deadline: clock().getTime() + runMs });
      metrics?.publishStoredMetrics();
      totals.runs += 1;
      totals.published += result.published;
      totals.failed += result.failed;
      onRun?.(result);
      if (result.stoppedBy === 'no-work' || result.stoppedBy === 'send-failure') pauseMs = idleMs;
    } catch (error) {
      totals.errors += 1;
      options.logger?.error('Outbox relay run failed; retrying', {
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
        retryInMs: errorBackoffMs,
      });
      pauseMs = errorBackoffMs;
    }
    if (pauseMs > 0) await sleep(pauseMs, undefined, { signal }).catch(() => {});
  }
  return totals;
}
