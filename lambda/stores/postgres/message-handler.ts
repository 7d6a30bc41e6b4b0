import type { SQSRecord } from 'aws-lambda';
import type postgres from 'postgres';
import type * as z from 'zod/mini';
import type { Envelope } from '../../worker/envelope.ts';
import type { ReferencedDocument, RoutedHandler } from '../../worker/routed-handler.ts';

/** What a domain handler receives: the transaction, the validated payload and the envelope. */
export interface HandlerContext<P> {
  /**
   * The inbox transaction. Every write must go through it so that it commits with the inbox row. It stops working
   * once the record's outcome is decided (`TransactionClosedError`): await every query before returning.
   */
  readonly sql: postgres.TransactionSql;
  /** The worker's inbox namespace (`WorkerOptions.consumer`): part of every external effect key. */
  readonly consumer: string;
  /**
   * The payload, validated by the handler's schema. A JSON payload sent by reference (`payloadRef`) arrives here
   * read, verified and parsed, as if it had been inline; a `document` handler gets the reference here.
   */
  readonly payload: P;
  /** The verified bytes of a `payloadRef`, for a handler with `referencedPayload: 'document'`. */
  readonly document?: ReferencedDocument;
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

/**
 * A domain handler of the PostgreSQL store for one messageType and schemaVersion: what the engine routes on
 * ({@link RoutedHandler}), and `handle`, which applies the effect inside the inbox transaction.
 */
export interface MessageHandler<S extends z.core.$ZodType = z.core.$ZodType> extends RoutedHandler<S> {
  /**
   * The result reference, when the payload alone determines it (`worker_inbox.result_ref`, at most 300
   * characters). Known before the handler runs, it is stored by the claim that inserts the inbox row, so the path
   * needs no statement after the handler: a round trip less per message. A reference
   * that `handle` returns is still stored, with one more statement when it differs from this one. Must not
   * throw (a throw stores no reference up front).
   */
  readonly resultRef?: (input: { payload: z.output<S>; envelope: Envelope }) => string;
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
