/**
 * The event source mapping's circuit breaker, for the breaker function and the ops commands.
 *
 * @internal
 */
export {
  type BreakerAction,
  type BreakerObservation,
  type BreakerSettings,
  type BreakerState,
  type BreakerStatus,
  type BreakerStep,
  type BreakerTransition,
  initialBreakerState,
  isProbeDue,
  type MappingView,
  probeBackoffMs,
  stepBreaker,
} from './breaker-state.ts';
export { createDatabaseProbe, type DatabaseProbe } from './create-database-probe.ts';
export {
  BREAKER_HOLD_TAG,
  disableMapping,
  type EventSourceMappingClient,
  enableMapping,
  halfOpenScaling,
  holdMapping,
  type MappingScaling,
  type MappingSnapshot,
  readMapping,
  releaseMapping,
} from './mapping-control.ts';
export { probeDatabase } from './probe-database.ts';
export {
  BREAKER_METRICS,
  type Breaker,
  type BreakerLogger,
  type BreakerMetrics,
  type BreakerOptions,
  type BreakerTick,
  createBreaker,
  runBreaker,
} from './run-breaker.ts';
