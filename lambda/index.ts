/**
 * `sqs-inbox-worker`: what a handler author needs, whatever builds the worker around the handlers — `defineHandler`
 * and its types, the errors a handler throws or catches, the envelope and outcome types, and the failure codes.
 * What builds and runs a worker is in the entries of its store and runtime, each a subpath of `package.json`
 * `exports` with an `index.ts` in the folder that owns it:
 *
 * | import from | for | file |
 * | --- | --- | --- |
 * | `sqs-inbox-worker` | writing handlers (this file) | `lambda/index.ts` |
 * | `sqs-inbox-worker/postgres` | a PostgreSQL worker: `createWorkerFromConfig`, `createSql`, migrations and roles | `lambda/stores/postgres/index.ts` |
 * | `sqs-inbox-worker/dynamodb` | a DynamoDB worker: `defineDynamoHandler`, `createDynamoWorkerFromConfig`, `createDynamoStore` | `lambda/stores/dynamodb/index.ts` |
 * | `sqs-inbox-worker/poller` | the long-running poller (ECS/Fargate) | `lambda/runtimes/poller/index.ts` |
 * | `sqs-inbox-worker/runtime` | your own wiring: `createWorker`, `createBatchEngine`, their options, `loadConfig` | `lambda/runtimes/index.ts` |
 * | `sqs-inbox-worker/outbox` | the producer side: `enqueueOutbox`, `offloadPayload` | `lambda/outbox/index.ts` |
 * | `sqs-inbox-worker/effects` | calls to the outside world through the effect log | `lambda/effects/index.ts` |
 * | `sqs-inbox-worker/cdk` | the CDK constructs | `lib/index.ts` |
 *
 * The modules behind the entries are internal and may change; the engine (`lambda/worker/`) is reached only through
 * the names the entries re-export. Entries only re-export, and no module under `lambda/` imports one but the
 * deployable entries (`lambda/handlers/`) and the example domain (`lambda/domain/`), so they cannot make a cycle.
 * Importing an entry costs nothing it does not use: `package.json` declares `sideEffects: false`, so a bundle keeps
 * only the names its code reaches.
 *
 * @example
 * ```ts
 * import * as z from 'zod/mini';
 * import { defineHandler, TerminalError } from 'sqs-inbox-worker';
 * import { createWorkerFromConfig } from 'sqs-inbox-worker/postgres';
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
 * export const handler = createWorkerFromConfig({ handlers: [paymentCaptured] });
 * ```
 *
 * @packageDocumentation
 */

// The canary of `sqs-worker smoke`: its message type is registered in every worker unless you define it yourself.
export { CANARY_MESSAGE_TYPE, CANARY_SCHEMA_VERSION } from './canary/canary-message.ts';
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
// The delay an HTTP Retry-After header asks for, for a RetryableError's `retryAfterSeconds`.
export { parseRetryAfter } from './retry-after.ts';
// The PostgreSQL handler: a function of the payload that writes in the inbox transaction (`defineDynamoHandler`,
// the DynamoDB store's, is in `sqs-inbox-worker/dynamodb`).
export {
  defineHandler,
  type HandlerContext,
  type HandlerResult,
  type MessageHandler,
} from './stores/postgres/message-handler.ts';
// What a message is and what became of it.
export type { AttemptPolicy, Envelope, PayloadRef } from './worker/envelope.ts';
// The deepest payload a message may carry: producer and worker refuse deeper ones (docs/semantics.md).
export { MAX_PAYLOAD_DEPTH } from './worker/json-depth.ts';
export type { OutcomeResult, RecordOutcome } from './worker/outcome.ts';
export type { ReferencedDocument } from './worker/routed-handler.ts';
