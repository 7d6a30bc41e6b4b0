/**
 * Constants shared by the engine, its configuration, the CDK construct, the docs and the tests: the option values,
 * the engine defaults and the metric names, each in one place. A leaf module: no logic, no imports.
 */

/** What happens to a terminal message: `quarantine` stores it and acknowledges it; `dlq` reports it until SQS moves it. */
export const TERMINAL_POLICIES = ['quarantine', 'dlq'] as const;

/** `per-message`: one transaction per record; `per-batch`: one per batch, a savepoint per record after a failure. */
export const COMMIT_MODES = ['per-message', 'per-batch'] as const;

/**
 * The defaults of `createWorker` options and of the `WORKER_*` / `DB_*` variables that set them
 * (docs/writing-handlers.md and docs/configuration.md show the same values; a test holds them to these).
 */
export const WORKER_DEFAULTS = {
  /** `WORKER_CONSUMER`: the inbox namespace. */
  consumer: 'case-worker',
  /** `DB_POOL_SIZE`: connections per Lambda environment. */
  poolSize: 1,
  /** `WORKER_RECORD_CONCURRENCY`: records processed at once. */
  recordConcurrency: 1,
  /** `WORKER_TERMINAL_POLICY`. */
  terminalPolicy: 'quarantine',
  /** `WORKER_COMMIT_MODE`. */
  commitMode: 'per-message',
  /** `WORKER_BACKOFF_BASE_SECONDS`: retry delay random(0, min(max, base × 2^(receiveCount−1))). */
  backoffBaseSeconds: 2,
  /** `WORKER_BACKOFF_MAX_SECONDS`. */
  backoffMaxSeconds: 900,
  /** `WORKER_MAX_BUSINESS_ATTEMPTS`: when the envelope's attemptPolicy gives none. */
  maxBusinessAttempts: 10,
  /** Floor of the deadline guard, which otherwise follows the observed p99 (`WORKER_DEADLINE_GUARD_MS` unset). */
  minDeadlineGuardMs: 2000,
  /** `WORKER_FAIL_INVOCATION_ON_FULL_FAILURE`. */
  failInvocationOnFullBatchFailure: true,
} as const;

/** Default `POWERTOOLS_METRICS_NAMESPACE` of the worker and the relay. */
export const DEFAULT_METRICS_NAMESPACE = 'SqsInboxWorker';

/**
 * Every EMF metric the worker and the outbox relay emit (Powertools Metrics), by name. The alarms and the
 * dashboard (lib/observability/worker-metrics.ts) read these same names; a test checks that everything they watch is emitted.
 */
export const METRIC_NAMES = {
  // One count per record, by outcome (unit Count).
  completed: 'Completed',
  duplicate: 'Duplicate',
  /**
   * A duplicate that is the same SQS message again (its messageId is the key's last one): a visibility timeout that
   * ran out or a crash between commit and delete. A red flag when it grows (unit Count, counted besides Duplicate).
   */
  duplicateRedelivery: 'DuplicateRedelivery',
  /** A duplicate with a new SQS messageId and the same idempotency key: the producer sent again (unit Count). */
  duplicateResend: 'DuplicateResend',
  staleVersionSkipped: 'StaleVersionSkipped',
  retryableFailure: 'RetryableFailure',
  terminalFailure: 'TerminalFailure',
  notYetDue: 'NotYetDue',
  deadlineDeferred: 'DeadlineDeferred',
  // Counts of what happened besides the outcome (unit Count).
  hashMismatch: 'HashMismatch',
  quarantined: 'Quarantined',
  /** A terminal message whose quarantine could not be written: reported, left to the DLQ if it goes on (Count). */
  quarantineFailed: 'QuarantineFailed',
  /** Per-batch mode: handlers run again after a failure rolled their batch back. */
  handlerReruns: 'HandlerReruns',
  /** Records per invocation (unit Count). */
  batchSize: 'BatchSize',
  // Timings per record (unit Milliseconds).
  processingMs: 'ProcessingMs',
  dbTransactionMs: 'DbTransactionMs',
  messageAgeMs: 'MessageAgeMs',
  /** SQS ApproximateReceiveCount of each record (unit Count, one value per record: read its Maximum and Average). */
  receiveCount: 'ReceiveCount',
  // Signals of load, one count per retryable record (lambda/concurrency/load-signal.ts; unit Count): what the
  // adaptive limit of records in flight reads, in the poller from its own records, on Lambda from the fleet's.
  loadContention: 'LoadContention',
  loadThrottle: 'LoadThrottle',
  loadUnavailable: 'LoadUnavailable',
  loadSlow: 'LoadSlow',
  /** The adaptive limit of records in flight (the poller's, or the mapping's MaximumConcurrency) when it changes (Count). */
  concurrencyLimit: 'ConcurrencyLimit',
  /** A `payloadRef` read refused by S3 (AccessDenied): a permission to fix (unit Count). */
  payloadAccessDenied: 'PayloadAccessDenied',
  // The outbox relay, per run.
  outboxPublished: 'OutboxPublished',
  outboxFailed: 'OutboxFailed',
  outboxOldestPendingAgeMs: 'OutboxOldestPendingAgeMs',
  // The event source mapping's breaker, one count per transition.
  breakerOpened: 'BreakerOpened',
  breakerHalfOpened: 'BreakerHalfOpened',
  breakerClosed: 'BreakerClosed',
  // The scheduled retention job, per run (the health job's names are HEALTH_METRICS in lambda/health/).
  retentionRowsRemoved: 'RetentionRowsRemoved',
  // The long-running poller (bin/poller.ts), besides the worker's per-record metrics.
  /** Records held by the poller after a batch settles (unit Count): its gauge of work in flight. */
  pollerInFlight: 'PollerInFlight',
  /** Visibility extensions by the heartbeat, one per message extended (unit Count). */
  pollerHeartbeats: 'PollerHeartbeats',
  /** 1 when the poller stops receiving because the database is down, 0 when it receives again (unit Count). */
  pollerPaused: 'PollerPaused',
  /** Messages handed back unstarted (visibility 0) on a pause or a stop (unit Count). */
  pollerReleased: 'PollerReleased',
} as const;
