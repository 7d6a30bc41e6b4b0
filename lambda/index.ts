/**
 * The public entry point of the runtime: everything a handler author needs, and nothing else. Import from here
 * (or from the package name, `sqs-inbox-worker`, which `package.json` `exports` maps to this file); the modules
 * behind it are internal and may change.
 *
 * Only re-exports live here. The engine never imports this file (its modules import each other directly), so
 * it cannot create an import cycle; entry points (`lambda/handlers/`), the example domain (`lambda/domain/`)
 * and user code import from it.
 *
 * @example
 * ```ts
 * import * as z from 'zod/mini';
 * import { createSql, createWorker, defineHandler, loadConfig, TerminalError } from 'sqs-inbox-worker';
 *
 * const paymentCaptured = defineHandler({
 *   messageType: 'PaymentCaptured',
 *   schemaVersion: 1,
 *   payload: z.object({ paymentId: z.string(), amount: z.string() }),
 *   async handle({ sql, payload }) {
 *     if (payload.amount.startsWith('-')) throw new TerminalError('NEGATIVE_AMOUNT', 'amount must be positive');
 *     await sql`insert into payments (payment_id, amount) values (${payload.paymentId}, ${payload.amount})
 *               on conflict (payment_id) do nothing`;
 *     return { resultRef: `payments/${payload.paymentId}` };
 *   },
 * });
 *
 * const config = loadConfig();
 * export const handler = createWorker({
 *   consumer: config.consumer,
 *   handlers: [paymentCaptured],
 *   sql: createSql(config.database),
 * });
 * ```
 *
 * @packageDocumentation
 */

// The canary of `sqs-worker smoke`: registered in every worker unless you define its message type yourself.
export { canaryDynamoHandler } from './canary/canary-dynamo-handler.ts';
export { canaryHandler } from './canary/canary-handler.ts';
export { CANARY_MESSAGE_TYPE, CANARY_SCHEMA_VERSION } from './canary/canary-message.ts';
// Configuration and the database client (module scope, once per Lambda environment).
export { type DatabaseConfig, loadConfig, type OutboxRelayConfig, type WorkerConfig } from './config.ts';
// Option values, defaults, metric names and failure codes (constants only).
export {
  COMMIT_MODES,
  DEFAULT_METRICS_NAMESPACE,
  METRIC_NAMES,
  TERMINAL_POLICIES,
  WORKER_DEFAULTS,
} from './constants.ts';
// External effects: the effect log in front of a call to the outside world.
export { effectKey } from './effects/effect-key.ts';
export {
  type HttpNotificationProviderOptions,
  httpNotificationProvider,
} from './effects/http-notification-provider.ts';
export type { NotificationProvider, NotificationRequest } from './effects/notification-provider.ts';
export {
  type ExternalEffectResult,
  type PerformExternalEffectOptions,
  performExternalEffect,
} from './effects/perform-external-effect.ts';
// Errors a handler throws, and the ones it may catch.
export {
  ConfigError,
  HandlerTimeoutError,
  RetryableError,
  TerminalError,
  TransactionClosedError,
  WorkerError,
} from './errors.ts';
export { FAILURE_CODES, type FailureCode } from './failure-codes.ts';
// Producer side: the transactional outbox.
export {
  type EnqueueOutboxOptions,
  type EnqueueOutboxResult,
  enqueueOutbox,
} from './outbox/enqueue-outbox.ts';
export {
  InvalidOutboxEnvelopeError,
  OutboxConflictError,
  OutboxError,
  OutboxOffloadError,
  OutboxUsageError,
} from './outbox/errors.ts';
// Statically re-exported: the bundle test keeps the S3 code out of the worker's entry (tree-shaken when unused).
export { offloadPayload, type PayloadOffloadTarget } from './outbox/offload-payload.ts';
export type { S3ClientSource } from './payloads/s3-client-source.ts';
export { createSql } from './postgres/db.ts';
// The worker's runtime-neutral core: a batch of SQS records and a time budget in, every record's outcome out
// (the Lambda handler, the poller and custom runtimes run on it).
export { createBatchEngine } from './runtimes/create-batch-engine.ts';
// The worker: a Lambda SQS handler built from domain handlers.
export { createWorker, type WorkerHandler } from './runtimes/lambda/create-worker.ts';
export {
  createWorkerFromConfig,
  type WorkerFromConfigOptions,
} from './runtimes/lambda/create-worker-from-config.ts';
// The long-running poller (ECS/Fargate) over the same engine: your own entry with your handlers (docs/poller.md).
export {
  loadPollerConfig,
  type Poller,
  type PollerConfig,
  type PollerFromConfigOptions,
  type PollerProcess,
  type PollerProcessConfig,
  type PollerStopResult,
  startPollerFromConfig,
  stopOnSignals,
} from './runtimes/poller/index.ts';
export type { WorkerOptions } from './runtimes/worker-options.ts';
export type { SqsClientSource } from './sqs/sqs-client-source.ts';
// The DynamoDB store: handlers that return their writes, committed with the inbox item in one TransactWriteItems.
export {
  type ConditionFailedRule,
  type DynamoHandlerContext,
  type DynamoHandlerResult,
  type DynamoMessageHandler,
  type DynamoTransactItem,
  type DynamoWrite,
  defineDynamoHandler,
  MAX_DOMAIN_WRITES,
} from './stores/dynamodb/dynamo-handler.ts';
export {
  createDynamoStore,
  type DynamoStore,
  type DynamoStoreOptions,
} from './stores/dynamodb/dynamo-store.ts';
export { DynamoTransactionTooLargeError } from './stores/dynamodb/errors.ts';
export {
  defineHandler,
  type HandlerContext,
  type HandlerResult,
  type MessageHandler,
} from './stores/postgres/message-handler.ts';
// Loads Powertools Tracer only when called: importing it costs nothing (docs/tracing.md).
export { newRecordTracer } from './tracing/new-record-tracer.ts';
export type { RecordTracer } from './tracing/record-tracer.ts';
export type { RecordTracerSource } from './tracing/record-tracer-source.ts';
export type { CommitMode, MetricName, TerminalPolicy } from './types.ts';
export type { BackoffSettings } from './worker/backoff.ts';
export type { BatchBudget, BatchEngine, BatchResult } from './worker/batch-engine.ts';
export type { AttemptPolicy, Envelope, PayloadRef } from './worker/envelope.ts';
// The deepest payload a message may carry: producer and worker refuse deeper ones (docs/semantics.md).
export { MAX_PAYLOAD_DEPTH } from './worker/json-depth.ts';
export type { OutcomeResult, RecordOutcome } from './worker/outcome.ts';
export type { ReferencedDocument } from './worker/routed-handler.ts';
