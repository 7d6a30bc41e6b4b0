/**
 * `sqs-inbox-worker/outbox`: the producer side — `enqueueOutbox` writes an envelope into the outbox in your own
 * transaction (the stack's relay sends it to the queue), `offloadPayload` puts a large payload in S3 and gives the
 * `payloadRef` to send instead (docs/outbox.md, docs/large-payloads.md), and the errors both throw. The relay's own
 * modules (`relay-outbox.ts`, batch planning) are internal.
 *
 * Only re-exports. `offloadPayload` loads the SDK's S3 code on first use, so importing it costs a worker nothing
 * (a bundle test keeps it so).
 *
 * @example
 * ```ts
 * import { enqueueOutbox } from 'sqs-inbox-worker/outbox';
 *
 * await sql.begin(async (tx) => {
 *   await tx`update invoices set status = 'ISSUED' where invoice_id = ${invoiceId}`;
 *   await enqueueOutbox(tx, envelope);
 * });
 * ```
 *
 * @packageDocumentation
 */

export type { OutboxRelayConfig } from '../config.ts';
export {
  type EnqueueOutboxOptions,
  type EnqueueOutboxResult,
  enqueueOutbox,
} from './enqueue-outbox.ts';
export {
  InvalidOutboxEnvelopeError,
  OutboxConflictError,
  OutboxError,
  OutboxOffloadError,
  OutboxUsageError,
} from './errors.ts';
export { offloadPayload, type PayloadOffloadTarget } from './offload-payload.ts';
