import { randomUUID } from 'node:crypto';
import type { AttemptPolicy, Envelope } from '../../lambda/worker/envelope.ts';

/** Fields of {@link exampleEnvelope}; everything but the message type, key, aggregate and payload is optional. */
export interface ExampleEnvelopeInput {
  readonly messageType:
    | 'CaseStageChanged'
    | 'CaseDeadlineCalculationRequested'
    | 'PaymentCaptured'
    | (string & {});
  readonly idempotencyKey: string;
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly payload: Record<string, unknown>;
  /** @default a random `msg_<uuid>` */
  readonly messageId?: string;
  /** @default 1 */
  readonly schemaVersion?: number;
  /** @default 'local-demo' */
  readonly producer?: string;
  /** @default now */
  readonly occurredAt?: string;
  readonly correlationId?: string;
  readonly attemptPolicy?: AttemptPolicy;
}

/**
 * Builds a valid message envelope (pattern document §4) for local runs and tests, the way a producer's outbox
 * would. Serialize it with `JSON.stringify` to get an SQS body.
 *
 * @example
 * ```ts
 * const body = JSON.stringify(exampleEnvelope({
 *   messageType: 'PaymentCaptured', idempotencyKey: 'payment:p-1', aggregateType: 'Payment', aggregateId: 'p-1',
 *   payload: { paymentId: 'p-1', accountId: 'a-1', amount: 10, currency: 'EUR' },
 * }));
 * ```
 */
export function exampleEnvelope(input: ExampleEnvelopeInput): Envelope {
  return {
    messageId: input.messageId ?? `msg_${randomUUID()}`,
    schemaVersion: input.schemaVersion ?? 1,
    messageType: input.messageType,
    producer: input.producer ?? 'local-demo',
    occurredAt: input.occurredAt ?? new Date().toISOString(),
    idempotencyKey: input.idempotencyKey,
    aggregateType: input.aggregateType,
    aggregateId: input.aggregateId,
    ...(input.correlationId ? { correlationId: input.correlationId } : {}),
    ...(input.attemptPolicy ? { attemptPolicy: input.attemptPolicy } : {}),
    payload: input.payload,
  };
}
