import type { SQSRecord } from 'aws-lambda';
import type postgres from 'postgres';
import type * as z from 'zod/mini';
import type { Envelope } from './envelope.ts';

/** What a domain handler receives: the transaction, the validated payload and the envelope. */
export interface HandlerContext<P> {
  /**
   * The inbox transaction. Every write must go through it so that it commits with the inbox row. It stops working
   * once the record's outcome is decided (`TransactionClosedError`): await every query before returning.
   */
  readonly sql: postgres.TransactionSql;
  /** The worker's inbox namespace (`WorkerOptions.consumer`): part of every external effect key. */
  readonly consumer: string;
  /** The payload, validated by the handler's schema. */
  readonly payload: P;
  /** The validated envelope (payload included, unvalidated). Never log `envelope.payload`. */
  readonly envelope: Envelope;
  /** The SQS record, for its attributes. */
  readonly record: SQSRecord;
}

/** What a domain handler returns. */
export interface HandlerResult {
  /** A reference to the effect (stored in `worker_inbox.result_ref`, at most 300 characters). */
  readonly resultRef?: string;
  /**
   * True when the message was valid but older than the state it targets (version guard): the handler wrote
   * nothing and the message is acknowledged as a successful no-op (metric StaleVersionSkipped).
   */
  readonly stale?: boolean;
}

/** A domain handler for one messageType and schemaVersion. */
export interface MessageHandler<S extends z.core.$ZodType = z.core.$ZodType> {
  /** The envelope `messageType` it handles. */
  readonly messageType: string;
  /** The envelope `schemaVersion` it handles. */
  readonly schemaVersion: number;
  /**
   * Schema of the payload, from `zod/mini` or `zod` (4.x); a payload that fails it is terminal (`INVALID_PAYLOAD`).
   * `zod/mini` keeps the bundle and the cold start small (see docs/performance.md).
   */
  readonly payload: S;
  /**
   * Applies the effect inside the inbox transaction. It must be idempotent at the domain level as well
   * (unique keys, version guards). Throw `TerminalError` for data that can never succeed and
   * `RetryableError` for conditions that may clear.
   */
  handle(context: HandlerContext<z.output<S>>): Promise<HandlerResult | undefined>;
}

/**
 * Declares a domain handler with its payload type inferred from its schema.
 *
 * @example
 * ```ts
 * export const paymentCaptured = defineHandler({
 *   messageType: 'PaymentCaptured',
 *   schemaVersion: 1,
 *   payload: z.object({ paymentId: z.string().check(z.minLength(1)) }), // import * as z from 'zod/mini'
 *   async handle({ sql, payload }) {
 *     await sql`insert into payments (payment_id) values (${payload.paymentId}) on conflict do nothing`;
 *     return { resultRef: `payments:${payload.paymentId}` };
 *   },
 * });
 * ```
 */
export function defineHandler<S extends z.core.$ZodType>(handler: MessageHandler<S>): MessageHandler<S> {
  return handler;
}
