/**
 * `sqs-inbox-worker/poller`: the long-running poller (ECS/Fargate) over the same engine as the Lambda worker —
 * `startPollerFromConfig` with your handlers, the environment it reads (`loadPollerConfig`), and `stopOnSignals` for a
 * graceful drain on SIGTERM (docs/poller.md). `bin/poller.ts` is the shipped container's entry.
 *
 * Only re-exports; the rest of `lambda/runtimes/poller/` (the receive loop, the heartbeat, the database pause) is
 * internal.
 *
 * @example
 * ```ts
 * import { startPollerFromConfig, stopOnSignals } from 'sqs-inbox-worker/poller';
 *
 * const running = await startPollerFromConfig({ handlers });
 * stopOnSignals({
 *   poller: running.poller,
 *   stopTimeoutMs: running.config.poller.stopTimeoutSeconds * 1000,
 *   close: running.close,
 *   exit: (code) => process.exit(code),
 *   logger: running.logger,
 * });
 * ```
 *
 * @packageDocumentation
 */

export { loadPollerConfig, type PollerConfig, type PollerProcessConfig } from './poller-config.ts';
export type { Poller, PollerStopResult } from './start-poller.ts';
export {
  type PollerFromConfigOptions,
  type PollerProcess,
  startPollerFromConfig,
} from './start-poller-from-config.ts';
export { type StopOnSignalsOptions, stopOnSignals } from './stop-on-signals.ts';
