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
  createFleetLimit,
  type FleetLimit,
  type FleetLimitOptions,
  type FleetLimitState,
  type FleetLimitTick,
  lastClosedWindow,
  MAPPING_CONCURRENCY_RANGE,
  METRICS_LAG_MS,
  type MetricDataClient,
  parsePin,
  readWindowSignals,
  type WorkerMetricsSource,
  windowQueries,
} from './fleet-limit.ts';
export {
  BREAKER_HOLD_TAG,
  CONCURRENCY_PIN_TAG,
  disableMapping,
  type EventSourceMappingClient,
  enableMapping,
  halfOpenScaling,
  holdMapping,
  type MappingScaling,
  type MappingSnapshot,
  pinMapping,
  readMapping,
  releaseMapping,
  setMaxConcurrency,
  unpinMapping,
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
