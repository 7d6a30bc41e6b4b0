import type { PollerLogger } from './poller-telemetry.ts';
import type { PollerStopResult } from './start-poller.ts';

/** Collaborators of {@link stopOnSignals}. */
export interface StopOnSignalsOptions {
  readonly poller: { stop(options: { timeoutMs: number }): Promise<PollerStopResult> };
  /** `POLLER_STOP_TIMEOUT_SECONDS` in milliseconds. */
  readonly stopTimeoutMs: number;
  /**
   * Closes the database connections: `graceful` after a drained stop; `now` after a timeout or a second signal,
   * which ends every connection at once so a transaction still open is rolled back by the server.
   */
  close(mode: 'graceful' | 'now'): Promise<void>;
  /** `process.exit`. */
  exit(code: number): void;
  readonly logger: PollerLogger;
  /** Where the signals come from. @default process */
  readonly signals?: Pick<NodeJS.Process, 'on' | 'off'>;
}

/**
 * The poller's graceful shutdown. The first SIGTERM or SIGINT stops receiving at once and lets the records in
 * flight settle within the stop timeout, then closes the database connections and exits 0. A second signal, or
 * the timeout, exits 1 after closing every connection at once: nothing that did not commit is acknowledged (the
 * poller deletes only committed records, and stops deleting anything once it gives up), and what was in flight
 * comes back when its lease ends. Returns a function that removes the listeners.
 *
 * @example
 * ```ts
 * const running = await startPollerFromConfig({ handlers });
 * stopOnSignals({ poller: running.poller, stopTimeoutMs: 30_000, close: running.close, exit: process.exit, logger: running.logger });
 * ```
 */
export function stopOnSignals(options: StopOnSignalsOptions): () => void {
  const signals = options.signals ?? process;
  let stopping = false;
  let exiting = false;
  const exitNow = async (code: number, reason: string) => {
    if (exiting) return;
    exiting = true;
    options.logger.warn('poller_exit_now', { reason, exitCode: code });
    await options.close('now').catch(() => {});
    options.exit(code);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      void exitNow(1, `second signal (${signal})`);
      return;
    }
    stopping = true;
    options.logger.info('poller_signal', { signal, stopTimeoutMs: options.stopTimeoutMs });
    void options.poller
      .stop({ timeoutMs: options.stopTimeoutMs })
      .then(async (result) => {
        if (!result.drained) return exitNow(1, `records still in flight after ${options.stopTimeoutMs} ms`);
        if (exiting) return;
        exiting = true;
        await options.close('graceful').catch(() => {});
        options.exit(0);
      })
      .catch((error: unknown) => exitNow(1, `stop failed: ${String(error)}`));
  };
  signals.on('SIGTERM', onSignal);
  signals.on('SIGINT', onSignal);
  return () => {
    signals.off('SIGTERM', onSignal);
    signals.off('SIGINT', onSignal);
  };
}
