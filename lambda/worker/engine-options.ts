import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { S3ClientSource } from '../payloads/s3-client-source.ts';
import type { RecordTracerSource } from '../tracing/record-tracer-source.ts';
import type { TerminalPolicy } from '../types.ts';
import type { BackoffSettings } from './backoff.ts';
import type { RecordOutcome } from './outcome.ts';
import type { RetryPolicy } from './retry-policy.ts';
import type { RoutedHandler } from './routed-handler.ts';
import type { Store } from './store.ts';

/**
 * Options of the engine (`createEngine`): the store it commits to, the handlers it routes to, and everything else
 * that is the same on every store and runtime. The public options (`WorkerOptions` of `createWorker` and
 * `createBatchEngine`) are these without `store`, plus how the store is given (`sql` or a DynamoDB `store`) and
 * what only a runtime reads.
 *
 * @internal
 */
export interface EngineOptions {
  /** Inbox namespace of this worker (`worker_inbox.consumer`), 1–100 characters. */
  readonly consumer: string;
  /**
   * The version of the worker code (`config.workerVersion`, from `WORKER_VERSION`): the inbox keeps the version that
   * first saw a key and the version of each attempt, a quarantine entry the version that quarantined it
   * (docs/operations.md, "Attempt history"). At most 64 characters are kept. @default 'unversioned'
   */
  readonly workerVersion?: string;
  /** Domain handlers of the store, one per messageType and schemaVersion. */
  // biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
  readonly handlers: readonly RoutedHandler<any>[];
  /** The store the records are committed to (`postgresStore`, `createDynamoStore`). */
  readonly store: Store;
  /**
   * S3 client that reads `payloadRef` payloads (GetObject), or a function that makes it on first use (the
   * deployable handler imports the SDK's S3 code only when a record first carries a reference: see
   * {@link S3ClientSource}). Without it, a record with a `payloadRef` fails retryable `PAYLOAD_READER_MISSING`.
   */
  readonly s3?: S3ClientSource;
  /**
   * Largest `payloadRef` object read, in bytes; a larger one is terminal `PAYLOAD_TOO_LARGE`, never read whole. A
   * JSON object costs about 11 times its size at its peak (bytes, text, parsed value, the schema's copy, garbage)
   * while its record runs, and per batch every referenced payload of the batch is held at once: the limit times
   * that times the records in flight, plus ~64 MiB for the worker, must fit the memory (docs/large-payloads.md; the
   * stack derives it so). @default 67108864 (64 MiB)
   */
  readonly maxPayloadBytes?: number;
  /**
   * Opens an X-Ray subsegment per record, linked to the producer's trace (`record-tracer.ts`), or a function that
   * makes the tracer on first use (`newRecordTracer`: Powertools Tracer and the X-Ray SDK load only then).
   * `createWorkerFromConfig` passes one when `POWERTOOLS_TRACE_ENABLED=true`. The producer's trace id is on every
   * record's log line either way. @default none: no subsegments, and the tracer code is never loaded
   */
  readonly tracer?: RecordTracerSource;
  /** Powertools Logger. @default a Logger of service POWERTOOLS_SERVICE_NAME */
  readonly logger?: Logger;
  /** Powertools Metrics. @default a Metrics of namespace POWERTOOLS_METRICS_NAMESPACE (or `SqsInboxWorker`) */
  readonly metrics?: Metrics;
  /** `quarantine`: store terminal messages and acknowledge them; `dlq`: report them until SQS moves them. @default 'quarantine' */
  readonly terminalPolicy?: TerminalPolicy;
  /** Records processed at once, 1 to what the store allows (PostgreSQL: the pool size, `sql.options.max`). @default 1 */
  readonly recordConcurrency?: number;
  /** Backoff of retryable failures. @default { baseSeconds: 2, maxSeconds: 900 } */
  readonly backoff?: Partial<BackoffSettings>;
  /**
   * Retry policies by failure code (`WORKER_RETRY_POLICY`): a retryable failure of a listed code backs off on its own
   * curve and, with `maxAttempts`, turns terminal after its own number of attempts; other codes use `backoff` and
   * `maxBusinessAttempts`. Numbers outside their ranges fail `createEngine` with a `ConfigError`.
   * @default {} (every code on `backoff`)
   */
  readonly retryPolicy?: RetryPolicy;
  /** Attempts after which a retryable failure is terminal, when the envelope gives none. @default 10 */
  readonly maxBusinessAttempts?: number;
  /**
   * Do not start a record with less than this left (used as given). Default: `min(half the full budget, max(2 s, p99))`
   * of the records that settled in time (`deadline-guard.ts`).
   */
  readonly deadlineGuardMs?: number;
  /** Clock in epoch milliseconds (tests). @default Date.now */
  readonly now?: () => number;
  /** Random source in [0, 1) for backoff jitter (tests). @default Math.random */
  readonly random?: () => number;
  /**
   * Called once per record of every batch with its final outcome (after a per-batch redo, only the redo's), after
   * its log line and metrics, in the records' order. For local runtimes, tests and custom telemetry: it must not
   * throw (a throw is logged as `worker_on_outcome_failed` and changes nothing) and should return quickly.
   */
  readonly onOutcome?: (outcome: RecordOutcome) => void;
  /**
   * Called the moment a record's outcome is final, while the rest of its batch may still run: in `per-message` mode
   * after its transaction (and bookkeeping) ended, or when it was not started; never in `per-batch` mode, whose
   * outcomes are final only with the batch's commit (a strategy that `settlesAtCommit`). For a runtime that holds
   * messages (the poller stops the record's heartbeat and settles it early). It must not throw (a throw is logged
   * as `worker_on_outcome_failed`).
   */
  readonly onRecordSettled?: (outcome: RecordOutcome) => void;
}
