/**
 * Defaults and limits of the long-running poller (`bin/poller.ts`, `POLLER_*` variables). A leaf module: no logic,
 * no imports. docs/configuration.md and docs/poller.md show the same values.
 */
export const POLLER_DEFAULTS = {
  /** `POLLER_BATCH_SIZE`: messages per ReceiveMessage, 1–10. */
  batchSize: 10,
  /** `POLLER_WAIT_SECONDS`: long-poll wait of a receive, 0–20. */
  waitSeconds: 20,
  /** `POLLER_VISIBILITY_SECONDS`: the lease a receive takes; the heartbeat renews it at half. */
  visibilitySeconds: 30,
  /** `POLLER_STOP_TIMEOUT_SECONDS`: how long a stop waits for records in flight before giving up. */
  stopTimeoutSeconds: 30,
  /** `POLLER_MAX_EXTENSION_SECONDS`: the longest the heartbeat holds one message in total, from its receive. */
  maxExtensionSeconds: 3600,
  /**
   * `POLLER_BATCH_TIMEOUT_SECONDS`: the time a received batch gets, as a Lambda invocation gets its function timeout
   * (the construct's default, 30 s): records start only within it and every database call is bounded by it.
   */
  batchTimeoutSeconds: 30,
  /** `POLLER_PROBE_TIMEOUT_MS`: a database probe without an answer after this long failed. */
  probeTimeoutMs: 5000,
  /** `POLLER_PROBE_BACKOFF_BASE_MS`: shortest pause, and the wait after the first failed probe (doubling). */
  probeBackoffBaseMs: 1000,
  /** `POLLER_PROBE_BACKOFF_MAX_MS`: the longest wait between two probes while paused. */
  probeBackoffMaxMs: 30_000,
  /** `POLLER_HALF_OPEN_MS`: after a good probe, one record at a time for this long before full concurrency. */
  halfOpenMs: 5000,
  /**
   * `POLLER_ADAPTIVE_CONCURRENCY`: `on` sets the records in flight from the database's signals of load (lock
   * timeouts, throttling, connection failures, slow transactions), between `POLLER_CONCURRENCY_FLOOR` and
   * `POLLER_CONCURRENCY`; `off` keeps them at `POLLER_CONCURRENCY`.
   */
  adaptiveConcurrency: 'on',
  /** `POLLER_CONCURRENCY_FLOOR`: the lowest the adaptive limit goes, 1 – `POLLER_CONCURRENCY`. */
  concurrencyFloor: 1,
} as const;

/**
 * The adaptive limit's window (ms): the records settled in it decide the next limit once, so a burst of failures
 * cuts it once per window, not once per record.
 */
export const ADAPTIVE_WINDOW_MS = 1000;

/**
 * SQS refuses a visibility that ends more than 12 hours after the receive: the heartbeat stops this many seconds
 * short of it (one renewal in flight, clock skew).
 */
export const SQS_MAX_VISIBILITY_SECONDS = 43_200;

/** Seconds the heartbeat keeps clear of {@link SQS_MAX_VISIBILITY_SECONDS}. */
export const VISIBILITY_LIMIT_MARGIN_SECONDS = 60;

/** Ranges of the `POLLER_*` variables (inclusive). */
export const POLLER_LIMITS = {
  batchSize: [1, 10],
  waitSeconds: [0, 20],
  visibilitySeconds: [2, 43_200],
  stopTimeoutSeconds: [1, 3600],
  maxExtensionSeconds: [1, SQS_MAX_VISIBILITY_SECONDS - VISIBILITY_LIMIT_MARGIN_SECONDS],
  batchTimeoutSeconds: [1, SQS_MAX_VISIBILITY_SECONDS - VISIBILITY_LIMIT_MARGIN_SECONDS],
  probeTimeoutMs: [100, 60_000],
  probeBackoffMs: [100, 3_600_000],
  halfOpenMs: [0, 3_600_000],
} as const;
