import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SQSRecord } from 'aws-lambda';
import { withCanaryHandler } from '../canary/with-canary-handler.ts';
import { DEFAULT_METRICS_NAMESPACE, METRIC_NAMES, WORKER_DEFAULTS } from '../constants.ts';
import { ConfigError } from '../errors.ts';
import { s3ClientResolver } from '../payloads/s3-client-source.ts';
import { recordTracerResolver } from '../tracing/record-tracer-source.ts';
import { MAX_WORKER_VERSION_LENGTH, UNVERSIONED } from '../worker-version.ts';
import type { BackoffSettings } from './backoff.ts';
import type {
  BatchRecord,
  BatchState,
  CommitBatch,
  CommitStrategy,
  EngineSettings,
} from './commit-strategy.ts';
import { DeadlineGuard } from './deadline-guard.ts';
import { HANDLER_MARGIN_MS } from './deadline-margins.ts';
import { decodeRecord } from './decode-record.ts';
import type { EngineOptions } from './engine-options.ts';
import { createHandlerRegistry } from './handler-registry.ts';
import { type RecordOutcome, receiveCountOf, recordOutcome, unstartedFacts, verdicts } from './outcome.ts';
import { processRecord } from './process-record.ts';
import { recordTelemetry } from './record-telemetry.ts';
import { DEFAULT_MAX_PAYLOAD_BYTES } from './resolve-payload.ts';
import { retryPolicyProblems } from './retry-policy.ts';
import { scheduleRecords } from './schedule-records.ts';

/** The time budget of one batch, given by the runtime. */
export interface BatchBudget {
  /** ms left for the whole batch (Lambda: context.getRemainingTimeInMillis) */
  remainingMs(): number;
}

/** What {@link BatchEngine.processBatch} decided about a batch. */
export interface BatchResult {
  /** one outcome per record, in the records' order */
  readonly outcomes: readonly RecordOutcome[];
  /** a connection-class failure happened (the rest of the batch was reported without touching the DB) */
  readonly databaseDown: boolean;
}

/** The runtime-neutral worker core: a batch of SQS records and a time budget in, every record's outcome out. */
export interface BatchEngine {
  /**
   * Processes a batch: decode and route, the deadline guard, record concurrency, FIFO groups, the commit mode,
   * one log line and the metrics per record, the batch-size metric (published), the `onOutcome` hook. It changes
   * no visibility, deletes nothing, and never throws for a record's failure nor for a batch that failed whole:
   * the runtime acts on the outcomes (acknowledged → delete; reported → `visibilitySeconds`).
   */
  processBatch(records: readonly SQSRecord[], budget: BatchBudget): Promise<BatchResult>;
}

/**
 * The default Logger of a worker: service POWERTOOLS_SERVICE_NAME, or the consumer.
 *
 * @internal
 */
export function defaultWorkerLogger(consumer: string): Logger {
  return new Logger({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? consumer });
}

/**
 * Builds the runtime-neutral core of a worker on a store: exactly-once effects under at-least-once delivery, for
 * any runtime that receives SQS records (the Lambda handler of `createWorker`, a long-running poller, a test).
 * Users call `createBatchEngine`, which picks the store from `sql` or `store` and calls this.
 *
 * Per record: decode and route (`decode-record.ts`), then the store's commit strategy (`options.store`, see
 * `store.ts`) claims the inbox row, skips duplicates, rejects a reused key with another payload, applies the domain
 * handler and marks the row COMPLETED. The options are validated here, the store's problems with them.
 *
 * The engine keeps state between batches (the deadline guard's samples, the per-batch savepoint mode): make one per
 * worker and reuse it; batches may run at once.
 *
 * @param optionProblems what the caller found wrong with the options it read itself (how the store was given),
 *   listed first in the same `ConfigError`.
 * @throws ConfigError when an option is invalid (every problem listed).
 *
 * @internal
 */
export function createEngine(options: EngineOptions, optionProblems: readonly string[] = []): BatchEngine {
  const { store } = options;
  // The toolkit's canary (`sqs-worker smoke`) is registered in every worker, unless the handlers define its type.
  const registry = createHandlerRegistry(withCanaryHandler(options.handlers, store.canaryHandler));
  const recordConcurrency = options.recordConcurrency ?? WORKER_DEFAULTS.recordConcurrency;
  const maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  checkEngineOptions(options, { optionProblems, recordConcurrency, maxPayloadBytes });
  const settings = engineSettings(options, registry, maxPayloadBytes);
  const strategy: CommitStrategy = store.commitStrategy(settings);
  const engine: EngineParts = {
    options,
    settings,
    strategy,
    recordConcurrency,
    guard: new DeadlineGuard(options.deadlineGuardMs, { now: settings.now }),
    onSettled: settledCallback(options, strategy, settings.logger),
  };
  return { processBatch: (records, budget) => processEngineBatch(engine, records, budget) };
}

/** What one engine keeps between its batches. */
interface EngineParts {
  readonly options: EngineOptions;
  readonly settings: EngineSettings;
  readonly strategy: CommitStrategy;
  readonly recordConcurrency: number;
  readonly guard: DeadlineGuard;
  readonly onSettled: ((outcome: RecordOutcome) => void) | undefined;
}

/** The options' problems, the caller's and the store's first: one `ConfigError` naming them all. */
function checkEngineOptions(
  options: EngineOptions,
  values: { optionProblems: readonly string[]; recordConcurrency: number; maxPayloadBytes: number },
): void {
  const { recordConcurrency, maxPayloadBytes } = values;
  const problems: string[] = [...values.optionProblems];
  if (!options.consumer || options.consumer.length > 100) {
    problems.push(`consumer must be 1–100 characters (given "${options.consumer}")`);
  }
  problems.push(...options.store.problems({ recordConcurrency }));
  if (options.retryPolicy) problems.push(...retryPolicyProblems(options.retryPolicy, 'retryPolicy'));
  if (!Number.isInteger(maxPayloadBytes) || maxPayloadBytes < 1) {
    problems.push(
      `maxPayloadBytes must be a whole number of bytes above 0 (given ${maxPayloadBytes}); the default is ${DEFAULT_MAX_PAYLOAD_BYTES} (64 MiB)`,
    );
  }
  if (problems.length > 0) throw new ConfigError(`Invalid worker options:\n- ${problems.join('\n- ')}`);
}

/** The settings every record runs with: the options' values and defaults, logger, metrics, payloads and tracer. */
function engineSettings(
  options: EngineOptions,
  registry: EngineSettings['registry'],
  maxPayloadBytes: number,
): EngineSettings {
  const logger = options.logger ?? defaultWorkerLogger(options.consumer);
  const metrics =
    options.metrics ??
    new Metrics({
      namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? DEFAULT_METRICS_NAMESPACE,
      serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? options.consumer,
    });
  const backoff: BackoffSettings = {
    baseSeconds: WORKER_DEFAULTS.backoffBaseSeconds,
    maxSeconds: WORKER_DEFAULTS.backoffMaxSeconds,
    ...options.backoff,
  };
  const retryPolicy = options.retryPolicy ?? {};
  return {
    consumer: options.consumer,
    workerVersion: (options.workerVersion ?? UNVERSIONED).slice(0, MAX_WORKER_VERSION_LENGTH),
    registry,
    terminalPolicy: options.terminalPolicy ?? WORKER_DEFAULTS.terminalPolicy,
    attemptDefaults: {
      maxBusinessAttempts: options.maxBusinessAttempts ?? WORKER_DEFAULTS.maxBusinessAttempts,
      retryPolicy,
    },
    backoff,
    retryPolicy,
    now: options.now ?? Date.now,
    random: options.random ?? Math.random,
    payloads: { s3: s3ClientResolver(options.s3, logger), maxBytes: maxPayloadBytes },
    ...(options.tracer ? { tracer: recordTracerResolver(options.tracer, logger) } : {}),
    logger,
    metrics,
  };
}

/** `onRecordSettled`, guarded; per message an outcome is final when it is set, per batch only with the commit. */
function settledCallback(
  options: EngineOptions,
  strategy: CommitStrategy,
  logger: EngineSettings['logger'],
): ((outcome: RecordOutcome) => void) | undefined {
  if (!options.onRecordSettled || strategy.settlesAtCommit) return undefined;
  return (outcome) => {
    try {
      options.onRecordSettled?.(outcome);
    } catch (error) {
      logger.warn('worker_on_outcome_failed', { messageId: outcome.messageId, error: String(error) });
    }
  };
}

/** One batch: decoded once, committed by the strategy, every record's outcome reported and published. */
async function processEngineBatch(
  engine: EngineParts,
  records: readonly SQSRecord[],
  budget: BatchBudget,
): Promise<BatchResult> {
  const { settings, strategy, guard } = engine;
  const arn = records[0]?.eventSourceARN ?? '';
  const fifo = arn.endsWith('.fifo');
  const state: BatchState = {
    databaseDown: false,
    remainingMs: () => budget.remainingMs() - strategy.commitReserveMs,
  };
  // What a batch starts with for its records: the largest is what a fresh invocation gets (the guard's cap).
  guard.noteBudget(state.remainingMs() - HANDLER_MARGIN_MS);
  // Decoded once (pure, no I/O), for the strategy's batch-wide reads and claims and for the records.
  const items: BatchRecord[] = records.map((record) => ({
    record,
    receiveCount: receiveCountOf(record),
    decoded: decodeRecord(record, settings.registry),
  }));
  const batch: CommitBatch = {
    records: items,
    fifo,
    state,
    totalRemainingMs: () => budget.remainingMs(),
    guardMs: () => guard.guardMs(),
    run: (recordStore, outcomes) =>
      scheduleRecords(items, (item) => processRecord(item, recordStore, settings, state), outcomes, {
        fifo,
        concurrency: strategy.concurrent ? engine.recordConcurrency : 1,
        guard,
        state,
        onSettled: engine.onSettled,
      }),
  };
  const decided = await strategy.commit(batch);
  const outcomes = items.map(
    ({ record, receiveCount }) =>
      decided.get(record.messageId) ??
      // A strategy that broke its contract: the record is reported, never acknowledged unseen.
      recordOutcome(
        unstartedFacts(record, receiveCount),
        verdicts.retryable(
          {
            code: 'UNHANDLED_ERROR',
            message:
              'the commit strategy decided no outcome for this record (an engine defect); it is retried',
          },
          undefined,
        ),
      ),
  );
  reportOutcomes(engine, outcomes, { queue: arn.split(':').at(-1) ?? '', batchSize: records.length });
  return { outcomes, databaseDown: state.databaseDown };
}

/** Each outcome's log line and metrics, the batch's size, then `onOutcome` (guarded). */
function reportOutcomes(
  engine: EngineParts,
  outcomes: readonly RecordOutcome[],
  batch: { queue: string; batchSize: number },
): void {
  const { logger, metrics } = engine.settings;
  for (const outcome of outcomes) recordTelemetry(outcome, { logger, metrics, queue: batch.queue });
  metrics.addMetric(METRIC_NAMES.batchSize, MetricUnit.Count, batch.batchSize);
  metrics.publishStoredMetrics();
  const { onOutcome } = engine.options;
  if (!onOutcome) return;
  for (const outcome of outcomes) {
    try {
      onOutcome(outcome);
    } catch (error) {
      logger.warn('worker_on_outcome_failed', {
        messageId: outcome.messageId,
        traceId: outcome.traceId,
        error: String(error),
      });
    }
  }
}
