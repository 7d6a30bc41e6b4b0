/**
 * The names the worker and the outbox relay emit as CloudWatch Embedded Metric Format (Powertools Metrics), in
 * ONE place, so the alarms and the dashboard of the stack read exactly what the code writes.
 *
 * Dimensions stay low-cardinality: Powertools adds `service` (= `POWERTOOLS_SERVICE_NAME`) to every metric and
 * nothing else is added, so one alarm per metric covers the whole worker.
 */
export const WORKER_METRICS = {
  /** Default `POWERTOOLS_METRICS_NAMESPACE` of the stack. */
  defaultNamespace: 'SqsInboxWorker',
  /** The only dimension; its value is `POWERTOOLS_SERVICE_NAME`. */
  dimension: 'service',
  /** Count metrics, one per record outcome (unit Count). */
  outcomes: [
    'Completed',
    'Duplicate',
    'RetryableFailure',
    'TerminalFailure',
    'HashMismatch',
    'Quarantined',
    'StaleVersionSkipped',
    'NotYetDue',
    'DeadlineDeferred',
  ],
  /** Timings (unit Milliseconds) and the batch size (unit Count). */
  timings: ['ProcessingMs', 'DbTransactionMs', 'MessageAgeMs'],
  batchSize: 'BatchSize',
  /** Emitted by the outbox relay: age of the oldest pending outbox row (Milliseconds). */
  outboxOldestPendingAgeMs: 'OutboxOldestPendingAgeMs',
  /**
   * Emitted by the event source mapping's breaker, one count per transition into open, half-open and closed
   * (`lambda/breaker/run-breaker.ts` `BREAKER_METRICS`).
   */
  breaker: ['BreakerOpened', 'BreakerHalfOpened', 'BreakerClosed'],
} as const;

/** Name of a worker outcome metric. */
export type WorkerOutcomeMetric = (typeof WORKER_METRICS.outcomes)[number];
