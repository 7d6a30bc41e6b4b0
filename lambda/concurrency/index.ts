/**
 * The adaptive limit of records in flight: the store's signals of load (lock timeouts, deadlocks, throttling,
 * connection failures, slow transactions) lower it, their absence raises it again, between a floor and the
 * capacity-derived ceiling. The poller runs one per process; the Lambda runtime's control loop moves the event source
 * mapping's `MaximumConcurrency` with the same decision over the fleet's metrics.
 */
export {
  AdaptiveLimit,
  type AdaptiveLimitSettings,
  type LimitChange,
  type SettledRecord,
} from './adaptive-limit.ts';
export {
  decideLimit,
  type LimitDecision,
  type LimitSettings,
  type LimitState,
  type WindowSignals,
} from './decide-limit.ts';
export { type LoadSignal, loadSignalOf, OVERLOAD_SIGNALS } from './load-signal.ts';
