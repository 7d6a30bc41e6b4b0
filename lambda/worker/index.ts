/** The engine: build a worker with `createWorker` and your handlers declared with `defineHandler`. */
export { applyAttemptPolicy } from './attempt-policy.ts';
export { backoffSeconds } from './backoff.ts';
export { classifyError, type Failure } from './classify-error.ts';
export { createWorker, type WorkerHandler, type WorkerOptions } from './create-worker.ts';
export { type AttemptPolicy, type Envelope, envelopeSchema } from './envelope.ts';
export {
  defineHandler,
  type HandlerContext,
  type HandlerResult,
  type MessageHandler,
} from './message-handler.ts';
export type { OutcomeResult, RecordOutcome } from './outcome.ts';
export { describeIssues, type ParseResult, parseSchema } from './parse-schema.ts';
export { canonicalJson, requestHash } from './request-hash.ts';
export type { SqsClientSource } from './sqs-client-source.ts';
