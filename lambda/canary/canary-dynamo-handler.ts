import type { DynamoMessageHandler } from '../stores/dynamodb/dynamo-handler.ts';
import { CANARY_MESSAGE_TYPE, CANARY_SCHEMA_VERSION, canaryPayloadSchema } from './canary-message.ts';
import { canaryFailure, canaryResultRef } from './canary-outcome.ts';

/**
 * The canary handler of a DynamoDB worker: the same messages and outcomes as `canaryHandler` (the PostgreSQL
 * worker's), with no domain write (only the inbox item is completed). The DynamoDB store brings it
 * (`createDynamoStore`); the engine registers it (see `withCanaryHandler`).
 */
export const canaryDynamoHandler: DynamoMessageHandler<typeof canaryPayloadSchema> = {
  store: 'dynamodb',
  messageType: CANARY_MESSAGE_TYPE,
  schemaVersion: CANARY_SCHEMA_VERSION,
  payload: canaryPayloadSchema,
  async handle({ payload }) {
    const failure = canaryFailure(payload.mode);
    if (failure) throw failure;
    return { writes: [], resultRef: canaryResultRef(payload) };
  },
};
