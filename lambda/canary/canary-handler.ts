import { RetryableError, TerminalError } from '../errors.ts';
import type { DynamoMessageHandler } from '../stores/dynamodb/dynamo-handler.ts';
import { defineHandler } from '../stores/postgres/message-handler.ts';
import {
  CANARY_MESSAGE_TYPE,
  CANARY_SCHEMA_VERSION,
  type CanaryMode,
  canaryPayloadSchema,
} from './canary-message.ts';

/** The result reference of an applied canary (`worker_inbox.result_ref`, the inbox item's `resultRef`). */
const resultRefOf = (payload: { runId: string }) => `canary:${payload.runId}`;

/**
 * What a canary's mode asks for: nothing for `apply` (its effect is the inbox row COMPLETED with its result
 * reference), a terminal failure for `poison`, a retryable one for `retry`, every time.
 */
function failureOf(mode: CanaryMode): Error | undefined {
  if (mode === 'poison') {
    return new TerminalError('CANARY_POISON', 'a poison canary of sqs-worker smoke: terminal on purpose');
  }
  if (mode === 'retry') {
    return new RetryableError(
      'CANARY_RETRYABLE',
      'a never-recovering canary of sqs-worker smoke: retryable on purpose until SQS moves it to the DLQ',
    );
  }
  return undefined;
}

/**
 * The canary handler of a PostgreSQL worker (`SqsInboxWorkerCanary` v1), registered in every worker by the toolkit
 * (see `withCanaryHandler`). It writes nothing to the domain: the inbox row COMPLETED with `canary:<runId>` is its
 * whole effect, stored by the claim itself (a declared result reference, so no statement runs after the handler).
 */
export const canaryHandler = defineHandler({
  messageType: CANARY_MESSAGE_TYPE,
  schemaVersion: CANARY_SCHEMA_VERSION,
  payload: canaryPayloadSchema,
  resultRef: ({ payload }) => resultRefOf(payload),
  async handle({ payload }) {
    const failure = failureOf(payload.mode);
    if (failure) throw failure;
    return { resultRef: resultRefOf(payload) };
  },
});

/**
 * The canary handler of a DynamoDB worker: the same messages and outcomes as {@link canaryHandler}, with no domain
 * write (only the inbox item is completed).
 */
export const canaryDynamoHandler: DynamoMessageHandler<typeof canaryPayloadSchema> = {
  store: 'dynamodb',
  messageType: CANARY_MESSAGE_TYPE,
  schemaVersion: CANARY_SCHEMA_VERSION,
  payload: canaryPayloadSchema,
  async handle({ payload }) {
    const failure = failureOf(payload.mode);
    if (failure) throw failure;
    return { writes: [], resultRef: resultRefOf(payload) };
  },
};
