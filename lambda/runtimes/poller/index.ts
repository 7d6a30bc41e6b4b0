/**
 * The long-running poller (ECS/Fargate): `bin/poller.ts` runs it; the local runtime and the tests start it. Only
 * re-exports. `startPollerFromConfig`, `stopOnSignals` and `loadPollerConfig` are public through `lambda/index.ts`;
 * the rest is internal.
 */
export { POLLER_DEFAULTS, POLLER_LIMITS } from './constants.ts';
export {
  createDatabasePause,
  type DatabasePause,
  type DatabasePauseOptions,
  type DatabasePauseSettings,
} from './database-pause.ts';
export {
  createLeaseHeartbeat,
  type HeldBatch,
  type LeaseHeartbeat,
  type LeaseHeartbeatOptions,
} from './lease-heartbeat.ts';
export {
  loadPollerConfig,
  type PollerConfig,
  type PollerProcessConfig,
  SQS_ENDPOINT_VARIABLES,
} from './poller-config.ts';
export type { BatchBudget, BatchResult, ProcessBatch } from './process-batch.ts';
export {
  type Poller,
  type PollerEvent,
  type PollerHooks,
  type PollerOptions,
  type PollerStats,
  type PollerStopResult,
  startPoller,
} from './start-poller.ts';
export {
  type PollerFromConfigOptions,
  type PollerProcess,
  startPollerFromConfig,
} from './start-poller-from-config.ts';
export { type StopOnSignalsOptions, stopOnSignals } from './stop-on-signals.ts';
