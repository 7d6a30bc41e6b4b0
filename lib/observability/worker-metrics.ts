import { DEFAULT_METRICS_NAMESPACE, METRIC_NAMES } from '../../lambda/constants.ts';
import { HEALTH_METRICS } from '../../lambda/health/health-metrics.ts';

/**
 * The metrics the alarms and the dashboard of the stack watch, taken from the names the worker and the outbox
 * relay emit as CloudWatch Embedded Metric Format (`METRIC_NAMES` in lambda/constants.ts, the one place the code
 * reads them from), so they can only read what the code writes.
 *
 * Dimensions stay low-cardinality: Powertools adds `service` (= `POWERTOOLS_SERVICE_NAME`) to every metric and
 * nothing else is added, so one alarm per metric covers the whole worker.
 */
export const WORKER_METRICS = {
  /** Default `POWERTOOLS_METRICS_NAMESPACE` of the stack. */
  defaultNamespace: DEFAULT_METRICS_NAMESPACE,
  /** The only dimension; its value is `POWERTOOLS_SERVICE_NAME`. */
  dimension: 'service',
  /** Count metrics, one per record outcome (unit Count). */
  outcomes: [
    METRIC_NAMES.completed,
    METRIC_NAMES.duplicate,
    METRIC_NAMES.retryableFailure,
    METRIC_NAMES.terminalFailure,
    METRIC_NAMES.hashMismatch,
    METRIC_NAMES.quarantined,
    METRIC_NAMES.quarantineFailed,
    METRIC_NAMES.staleVersionSkipped,
    METRIC_NAMES.notYetDue,
    METRIC_NAMES.deadlineDeferred,
    METRIC_NAMES.payloadAccessDenied,
  ],
  /** Per-batch mode: handler reruns after a rolled-back batch (unit Count). */
  handlerReruns: METRIC_NAMES.handlerReruns,
  /** Timings (unit Milliseconds) and the batch size (unit Count). */
  timings: [METRIC_NAMES.processingMs, METRIC_NAMES.dbTransactionMs, METRIC_NAMES.messageAgeMs],
  batchSize: METRIC_NAMES.batchSize,
  /** Emitted by the outbox relay: age of the oldest pending outbox row (Milliseconds). */
  outboxOldestPendingAgeMs: METRIC_NAMES.outboxOldestPendingAgeMs,
  /** Emitted by the outbox relay per run: rows published and rows that failed to send (Count). */
  outboxPublished: METRIC_NAMES.outboxPublished,
  outboxFailed: METRIC_NAMES.outboxFailed,
  /** Emitted by the scheduled health job (lambda/handlers/health.ts): database figures and its heartbeat. */
  health: HEALTH_METRICS,
  /** Emitted by the scheduled retention job (lambda/handlers/retention.ts): rows removed per run (Count). */
  retentionRowsRemoved: METRIC_NAMES.retentionRowsRemoved,
  /**
   * Emitted by the event source mapping's breaker, one count per transition into open, half-open and closed
   * (`lambda/breaker/run-breaker.ts` `BREAKER_METRICS`).
   */
  breaker: [METRIC_NAMES.breakerOpened, METRIC_NAMES.breakerHalfOpened, METRIC_NAMES.breakerClosed],
  /**
   * The signals of load, one count per retryable record (`lambda/worker/record-telemetry.ts` `LOAD_METRICS`), which
   * the adaptive limit of records in flight reads.
   */
  load: [
    METRIC_NAMES.loadContention,
    METRIC_NAMES.loadThrottle,
    METRIC_NAMES.loadUnavailable,
    METRIC_NAMES.loadSlow,
  ],
  /**
   * Duplicates told apart, one count per duplicate besides `Duplicate` (`record-telemetry.ts` `DUPLICATE_METRICS`):
   * the same SQS message again (redelivery) or a new message with the same key (resend).
   */
  duplicateCopies: [METRIC_NAMES.duplicateRedelivery, METRIC_NAMES.duplicateResend],
  /** Each record's SQS ApproximateReceiveCount (unit Count): its Maximum and Average are the receive-count trend. */
  receiveCount: METRIC_NAMES.receiveCount,
  /** The limit of records in flight: the mapping's `MaximumConcurrency`, published by the breaker each tick. */
  concurrencyLimit: METRIC_NAMES.concurrencyLimit,
} as const;

/** Name of a worker outcome metric. */
export type WorkerOutcomeMetric = (typeof WORKER_METRICS.outcomes)[number];
