import type { SQSRecord } from 'aws-lambda';
import { msUntilDue } from './attempt-policy.ts';
import { MAX_VISIBILITY_SECONDS } from './backoff.ts';
import type { Failure } from './classify-error.ts';
import type { BatchRecord, EngineSettings } from './commit-strategy.ts';
import type { DecodedRecord } from './decode-record.ts';
import type { Envelope } from './envelope.ts';
import { type Verdict, verdicts } from './outcome.ts';
import type { ReferencedPayload } from './record-store.ts';
import type { ReferencedDocument } from './routed-handler.ts';

/**
 * What every store's handler receives besides its store's own handle (a transaction, a client and table).
 *
 * @internal
 */
export interface MessageContext {
  /** The worker's inbox namespace. */
  readonly consumer: string;
  /** The payload, validated by the handler's schema (read from S3 first for a `payloadRef`). */
  readonly payload: unknown;
  /** The verified bytes of a `payloadRef`, for a handler with `referencedPayload: 'document'`. */
  readonly document?: ReferencedDocument;
  /** The validated envelope. */
  readonly envelope: Envelope;
  /** The SQS record. */
  readonly record: SQSRecord;
}

/**
 * How a record's preparation ended: `decided` (its verdict, nothing written: a `notBefore` still ahead), `failed`
 * (a failure to settle: undecodable, a payload that could not be read), or `ready` for its store: the message with
 * its payload read and the store-free part of its handler's context. `knownCompleted` is true when the key was found
 * COMPLETED with this request before its payload was read: the payload was not read (the object may even be gone).
 *
 * @internal
 */
export type PreparedRecord =
  | { readonly kind: 'decided'; readonly verdict: Verdict }
  | { readonly kind: 'failed'; readonly failure: Failure }
  | {
      readonly kind: 'ready';
      readonly decoded: DecodedRecord;
      readonly message: DecodedRecord;
      readonly knownCompleted: boolean;
      readonly context: MessageContext;
    };

/**
 * The store-free steps of a record before its store is written, the same for every store: an undecodable record
 * fails terminally, a record whose attempt policy is not due yet waits (`notYetDue`), and a payload in S3 is read
 * (`referencedPayload`, the store's read: before any transaction, so no database connection waits on S3). Returns
 * what the template acts on; writes nothing.
 *
 * @internal
 */
export async function prepareRecord(
  item: BatchRecord,
  deps: Pick<EngineSettings, 'consumer' | 'now'>,
  referencedPayload: (decoded: DecodedRecord) => Promise<ReferencedPayload>,
): Promise<PreparedRecord> {
  const { record, decoded } = item;
  if (!decoded.ok) {
    return {
      kind: 'failed',
      failure: { retryable: false, code: decoded.code, message: decoded.message, connection: false },
    };
  }

  const dueInMs = msUntilDue(decoded.envelope.attemptPolicy, deps.now());
  if (dueInMs > 0) {
    const waitSeconds = Math.ceil(dueInMs / 1000);
    const verdict = verdicts.notYetDue(
      decoded.envelope.attemptPolicy?.notBefore ?? undefined,
      waitSeconds,
      Math.min(waitSeconds, MAX_VISIBILITY_SECONDS),
    );
    return { kind: 'decided', verdict };
  }

  let message: DecodedRecord = decoded;
  let knownCompleted = false;
  if (decoded.pendingRef) {
    const read = await referencedPayload(decoded);
    if (!read.ok) return { kind: 'failed', failure: read.failure };
    message = read.decoded;
    knownCompleted = read.completedAlready;
  }
  return {
    kind: 'ready',
    decoded,
    message,
    knownCompleted,
    context: {
      consumer: deps.consumer,
      payload: message.payload,
      ...(message.document ? { document: message.document } : {}),
      envelope: message.envelope,
      record,
    },
  };
}
