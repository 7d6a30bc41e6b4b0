/**
 * `sqs-inbox-worker/runtime`: a worker wired by your own code, on either store — the Lambda handler
 * (`createWorker`), the runtime-neutral core a runtime of your own runs (`createBatchEngine`: a batch of SQS records
 * and a time budget in, every record's outcome out), the options both take and the types those options name, and
 * the configuration read from the environment (`loadConfig`) with the defaults and metric names. The store comes
 * from `sqs-inbox-worker/postgres` (`createSql`) or `sqs-inbox-worker/dynamodb` (`createDynamoStore`); the
 * ready-made wirings are `createWorkerFromConfig` (`/postgres`), `createDynamoWorkerFromConfig` (`/dynamodb`) and
 * `startPollerFromConfig` (`/poller`).
 *
 * Only re-exports: the engine (`lambda/worker/`) is reached through the names below, never by its modules.
 *
 * @example
 * ```ts
 * import { createSql } from 'sqs-inbox-worker/postgres';
 * import { createWorker, loadConfig } from 'sqs-inbox-worker/runtime';
 *
 * const config = loadConfig();
 * export const handler = createWorker({ consumer: config.consumer, handlers, sql: createSql(config.database) });
 * ```
 *
 * @packageDocumentation
 */

export { loadConfig, type WorkerConfig } from '../config.ts';
export {
  DEFAULT_METRICS_NAMESPACE,
  METRIC_NAMES,
  TERMINAL_POLICIES,
  WORKER_DEFAULTS,
} from '../constants.ts';
export type { S3ClientSource } from '../payloads/s3-client-source.ts';
export type { SqsClientSource } from '../sqs/sqs-client-source.ts';
// Loads Powertools Tracer only when called: importing it costs nothing (docs/tracing.md).
export { newRecordTracer } from '../tracing/new-record-tracer.ts';
export type { RecordTracer } from '../tracing/record-tracer.ts';
export type { RecordTracerSource } from '../tracing/record-tracer-source.ts';
export type { MetricName, TerminalPolicy } from '../types.ts';
export type { BackoffSettings } from '../worker/backoff.ts';
export type { BatchBudget, BatchEngine, BatchResult } from '../worker/batch-engine.ts';
export type { CodeRetryPolicy, RetryPolicy } from '../worker/retry-policy.ts';
export { createBatchEngine } from './create-batch-engine.ts';
export { createWorker, type WorkerHandler } from './lambda/create-worker.ts';
export type { WorkerOptions } from './worker-options.ts';
