/**
 * The outbox modules in one place, for the project's own tools and tests.
 * Handler code imports the public part from `lambda/index.ts`.
 *
 * @internal
 */
export {
  type EnqueueOutboxOptions,
  type EnqueueOutboxResult,
  enqueueOutbox,
  OUTBOX_MAX_MESSAGE_BYTES,
} from './enqueue-outbox.ts';
export {
  InvalidOutboxEnvelopeError,
  OutboxConflictError,
  OutboxError,
  OutboxOffloadError,
  OutboxUsageError,
} from './errors.ts';
export { type FifoMessageIds, fifoMessageIds } from './fifo-message-ids.ts';
export { offloadPayload, type PayloadOffloadTarget } from './offload-payload.ts';
export {
  planSendBatches,
  type SendBatchLimits,
  SQS_MAX_BATCH_BYTES,
  SQS_MAX_BATCH_ENTRIES,
} from './plan-send-batches.ts';
export {
  type OutboxRelayLogger,
  type OutboxSqsSender,
  type RelayOutboxOptions,
  type RelayOutboxResult,
  relayOutbox,
} from './relay-outbox.ts';
