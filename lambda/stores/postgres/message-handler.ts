import type { SQSRecord } from 'aws-lambda';
import type postgres from 'postgres';
import type * as z from 'zod/mini';
import type { Envelope, PayloadRef } from '../../worker/envelope.ts';

/**
 * A document read from S3 for a handler that takes its payload as bytes (`referencedPayload: 'document'`): the
 * whole object, already checked against the reference's size and SHA-256.
 */
export interface ReferencedDocument {
  /** The object's bytes (at most the worker's `maxPayloadBytes`). Never log them. */
  readonly bytes: Buffer;
  /** SHA-256 of `bytes`, hex: equal to `payloadRef.sha256`. */
  readonly sha256: string;
  /** Length of `bytes`: equal to `payloadRef.size`. */
  readonly size: number;
  /** The reference it was read from. */
  readonly ref: PayloadRef;
}

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
   * How a payload sent by reference (`payloadRef`) reaches the handler. `json`: the object is a JSON object,
   * parsed and validated by `payload` and handed over as if it had been inline (a message may carry either
   * form). `document`: the object is opaque bytes (a PDF, a text file): `payload` validates the reference
   * itself, the bytes arrive in `context.document`, and an inline payload is refused (`INVALID_PAYLOAD`).
   * @default 'json'
   */
  readonly referencedPayload?: 'json' | 'document';
  /**
   * The result reference, when the payload alone determines it (`worker_inbox.result_ref`, at most 300
   * characters). Known before the handler runs, it is stored by the claim that inserts the inbox row, so the path
   * needs no statement after the handler: 2 round trips less per message with `prepare: false`. A reference
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
