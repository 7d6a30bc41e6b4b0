import { WorkerError } from '../errors.ts';

/** Base of the errors thrown by the outbox API and relay. */
export class OutboxError extends WorkerError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'OutboxError';
  }
}

/** Thrown by `enqueueOutbox` when the envelope fails `envelopeSchema` or is too large to send. */
export class InvalidOutboxEnvelopeError extends OutboxError {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidOutboxEnvelopeError';
  }
}

/**
 * Thrown by `enqueueOutbox` when the idempotency key (or message id) is already in the outbox with a different
 * messageType, schemaVersion or payload: the producer reused a key for a different event.
 */
export class OutboxConflictError extends OutboxError {
  /** The idempotency key of the rejected envelope. */
  readonly idempotencyKey: string;
  constructor(idempotencyKey: string, message: string) {
    super(message);
    this.name = 'OutboxConflictError';
    this.idempotencyKey = idempotencyKey;
  }
}

/** Thrown when an outbox function is given a client of the wrong kind (a pool where a transaction is needed). */
export class OutboxUsageError extends OutboxError {
  constructor(message: string) {
    super(message);
    this.name = 'OutboxUsageError';
  }
}

/** Thrown when a payload to offload could not be written to S3 (`enqueueOutbox` with `offload`, `offloadPayload`). */
export class OutboxOffloadError extends OutboxError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'OutboxOffloadError';
  }
}
