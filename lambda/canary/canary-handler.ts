import { defineHandler } from '../stores/postgres/message-handler.ts';
import { CANARY_MESSAGE_TYPE, CANARY_SCHEMA_VERSION, canaryPayloadSchema } from './canary-message.ts';
import { canaryFailure, canaryResultRef } from './canary-outcome.ts';

/**
 * The canary handler of a PostgreSQL worker (`SqsInboxWorkerCanary` v1), registered in every worker by the toolkit
 * (see `withCanaryHandler`). It writes nothing to the domain: the inbox row COMPLETED with `canary:<runId>` is its
 * whole effect, stored by the claim itself (a declared result reference, so no statement runs after the handler).
 */
export const canaryHandler = defineHandler({
  messageType: CANARY_MESSAGE_TYPE,
  schemaVersion: CANARY_SCHEMA_VERSION,
  payload: canaryPayloadSchema,
  resultRef: ({ payload }) => canaryResultRef(payload),
  async handle({ payload }) {
    const failure = canaryFailure(payload.mode);
    if (failure) throw failure;
    return { resultRef: canaryResultRef(payload) };
  },
});
