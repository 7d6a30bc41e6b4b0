import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SQSRecord } from 'aws-lambda';
import type postgres from 'postgres';
import { withCanaryHandler } from '../canary/with-canary-handler.ts';
import { DEFAULT_METRICS_NAMESPACE, METRIC_NAMES, WORKER_DEFAULTS } from '../constants.ts';
import { ConfigError } from '../errors.ts';
import { s3ClientResolver } from '../payloads/s3-client-source.ts';
import { createPerBatchCommit } from '../stores/postgres/commit-per-batch.ts';
import { createPerMessageCommit } from '../stores/postgres/commit-per-message.ts';
import type { MessageHandler } from '../stores/postgres/message-handler.ts';
import { recordTracerResolver } from '../tracing/record-tracer-source.ts';
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
import { createHandlerRegistry } from './handler-registry.ts';
import { type RecordOutcome, receiveCountOf, recordOutcome, unstartedFacts, verdicts } from './outcome.ts';
import { recordTelemetry } from './record-telemetry.ts';
import { DEFAULT_MAX_PAYLOAD_BYTES } from './resolve-payload.ts';
import { scheduleRecords } from './schedule-records.ts';
import type { WorkerOptions } from './worker-options.ts';

/** Records a DynamoDB worker runs at once at most (a standard queue's default batch). */
const DYNAMODB_MAX_RECORD_CONCURRENCY = 10;

/**
 * What is wrong with the options' store: neither or both of `sql` and `store`, handlers of the other store, a
 * PostgreSQL commit mode on DynamoDB. A DynamoDB handler run by the PostgreSQL engine would return its writes to
 * nobody and be acknowledged without an effect: refused here, at cold start.
 */
function storeProblems(options: WorkerOptions): string[] {
  const problems: string[] = [];
  if (!options.sql && !options.store) {
    problems.push('give sql (a postgres.js client, PostgreSQL) or store (createDynamoStore, DynamoDB)');
  }
  if (options.sql && options.store) {
    problems.push('give sql (PostgreSQL) or store (DynamoDB), not both: one worker has one inbox');
  }
  const dynamo = options.store !== undefined;
  const mismatched = (options.handlers as readonly { messageType: string; store?: string }[])
    .filter((handler) => (handler.store === 'dynamodb') !== dynamo)
    .map((handler) => handler.messageType);
  if (mismatched.length > 0) {
    problems.push(
      dynamo
        ? `handlers ${mismatched.join(', ')} are PostgreSQL handlers (defineHandler) and the store is DynamoDB; use defineDynamoHandler`
        : `handlers ${mismatched.join(', ')} are DynamoDB handlers (defineDynamoHandler); give them a DynamoDB store (store: createDynamoStore(…)) or use defineHandler`,
    );
  }
  if (dynamo && options.commitMode === 'per-batch') {
    problems.push(
      'commitMode per-batch is a PostgreSQL mode (one transaction per batch); with a DynamoDB store every record is its own TransactWriteItems: leave commitMode unset',
    );
  }
  return problems;
}

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
 * Builds the runtime-neutral core of a worker: exactly-once effects under at-least-once delivery, for any runtime
 * that receives SQS records (the Lambda handler of `createWorker`, a long-running poller, a test).
 *
 * Per record: decode and route (`decode-record.ts`), then the commit strategy of `commitMode` — `per-message`
 * (`commit-per-message.ts`: one transaction per record, up to `recordConcurrency` at once) or `per-batch`
 * (`commit-per-batch.ts`: one transaction per batch) — claims the inbox row, skips duplicates, rejects a reused key
 * with another payload, applies the domain handler and marks the row COMPLETED. The options are validated here.
 *
 * The engine keeps state between batches (the deadline guard's samples, the per-batch savepoint mode): make one per
 * worker and reuse it; batches may run at once.
 *
 * @throws ConfigError when an option is invalid (every problem listed).
 *
 * @example
 * ```ts
 * const engine = createBatchEngine({ consumer: 'case-worker', handlers: exampleHandlers, sql: createSql(config.database) });
 * const { outcomes } = await engine.processBatch(messages.map(toSqsRecord), { remainingMs: () => deadline - Date.now() });
 * for (const outcome of outcomes) if (outcome.acknowledged) await deleteMessage(outcome.messageId);
 * ```
 */
export function createBatchEngine(options: WorkerOptions): BatchEngine {
  const { sql, store } = options;
  // The toolkit's canary (`sqs-worker smoke`) is registered in every worker, unless the handlers define its type.
  const registry = createHandlerRegistry(
    withCanaryHandler(options.handlers as readonly MessageHandler[], store ? 'dynamodb' : 'postgres'),
  );
  // DynamoDB records hold no pooled connection: up to a batch of 10 at once.
  const poolSize = store ? DYNAMODB_MAX_RECORD_CONCURRENCY : (sql?.options?.max ?? 1);
  const recordConcurrency = options.recordConcurrency ?? WORKER_DEFAULTS.recordConcurrency;
  const problems: string[] = storeProblems(options);
  if (!options.consumer || options.consumer.length > 100) {
    problems.push(`consumer must be 1–100 characters (given "${options.consumer}")`);
  }
  if (!Number.isInteger(recordConcurrency) || recordConcurrency < 1 || recordConcurrency > poolSize) {
    problems.push(
      store
        ? `recordConcurrency must be a whole number from 1 to ${DYNAMODB_MAX_RECORD_CONCURRENCY} with a DynamoDB store (given ${recordConcurrency})`
        : `recordConcurrency must be a whole number from 1 to the pool size ${poolSize} (given ${recordConcurrency}); raise the pool size (postgres max) or lower recordConcurrency`,
    );
  }
  if (options.commitMode === 'per-batch' && sql?.options?.fetch_types === false) {
    problems.push(
      'commitMode per-batch claims a batch with arrays, which a postgres.js client with fetch_types: false cannot send; leave fetch_types on (the default)',
    );
  }
  if (options.commitMode === 'per-batch' && recordConcurrency !== 1) {
    problems.push(
      `commitMode per-batch runs records one after another in one transaction; set recordConcurrency to 1 (given ${recordConcurrency})`,
    );
  }
  const maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  if (!Number.isInteger(maxPayloadBytes) || maxPayloadBytes < 1) {
    problems.push(
      `maxPayloadBytes must be a whole number of bytes above 0 (given ${maxPayloadBytes}); the default is ${DEFAULT_MAX_PAYLOAD_BYTES} (64 MiB)`,
    );
  }
  if (problems.length > 0) throw new ConfigError(`Invalid worker options:\n- ${problems.join('\n- ')}`);

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
  const settings: EngineSettings = {
    consumer: options.consumer,
    registry,
    terminalPolicy: options.terminalPolicy ?? WORKER_DEFAULTS.terminalPolicy,
    attemptDefaults: {
      maxBusinessAttempts: options.maxBusinessAttempts ?? WORKER_DEFAULTS.maxBusinessAttempts,
    },
    backoff,
    now: options.now ?? Date.now,
    random: options.random ?? Math.random,
    payloads: { s3: s3ClientResolver(options.s3, logger), maxBytes: maxPayloadBytes },
    ...(options.tracer ? { tracer: recordTracerResolver(options.tracer, logger) } : {}),
    logger,
    metrics,
  };
  // The DynamoDB strategy comes with its store: a PostgreSQL worker's bundle never loads the DynamoDB code.
  const strategy: CommitStrategy = store
    ? store.commitStrategy(settings)
    : options.commitMode === 'per-batch'
      ? createPerBatchCommit(sql as postgres.Sql, settings)
      : createPerMessageCommit(sql as postgres.Sql, settings);
  const guard = new DeadlineGuard(options.deadlineGuardMs, { now: settings.now });
  // Per message, an outcome is final when it is set; per batch only with the batch's commit.
  const onSettled =
    options.onRecordSettled && options.commitMode !== 'per-batch'
      ? (outcome: RecordOutcome) => {
          try {
            options.onRecordSettled?.(outcome);
          } catch (error) {
            logger.warn('worker_on_outcome_failed', { messageId: outcome.messageId, error: String(error) });
          }
        }
      : undefined;

  return {
    async processBatch(records, budget) {
      const arn = records[0]?.eventSourceARN ?? '';
      const queue = arn.split(':').at(-1) ?? '';
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
        decoded: decodeRecord(record, registry),
      }));
      const batch: CommitBatch = {
        records: items,
        fifo,
        state,
        totalRemainingMs: () => budget.remainingMs(),
        guardMs: () => guard.guardMs(),
        schedule: (process, outcomes) =>
          scheduleRecords(items, process, outcomes, {
            fifo,
            concurrency: strategy.concurrent ? recordConcurrency : 1,
            guard,
            state,
            onSettled,
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

      for (const outcome of outcomes) recordTelemetry(outcome, { logger, metrics, queue });
      metrics.addMetric(METRIC_NAMES.batchSize, MetricUnit.Count, records.length);
      metrics.publishStoredMetrics();
      if (options.onOutcome) {
        for (const outcome of outcomes) {
          try {
            options.onOutcome(outcome);
          } catch (error) {
            logger.warn('worker_on_outcome_failed', {
              messageId: outcome.messageId,
              traceId: outcome.traceId,
              error: String(error),
            });
          }
        }
      }
      return { outcomes, databaseDown: state.databaseDown };
    },
  };
}
