import type * as z from 'zod/mini';
import type { PayloadRef } from './envelope.ts';

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

/**
 * What the engine knows of a domain handler, of any store: the messageType and schemaVersion it is routed by, the
 * schema its payload is validated with, and how a payload sent by reference reaches it. Each store's handler adds
 * how it applies the effect (`MessageHandler.handle` with a PostgreSQL transaction, `DynamoMessageHandler.handle`
 * returning its writes); the store's record processor calls it.
 */
export interface RoutedHandler<S extends z.core.$ZodType = z.core.$ZodType> {
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
}
