import type { SQSRecord } from 'aws-lambda';
import { msUntilDue } from './attempt-policy.ts';
import { MAX_VISIBILITY_SECONDS } from './backoff.ts';
import type { Failure } from './classify-error.ts';
import type { BatchRecord, EngineSettings } from './commit-strategy.ts';
import { HANDLER_MARGIN_MS } from './deadline-margins.ts';
import type { DecodedRecord } from './decode-record.ts';
import type { Envelope } from './envelope.ts';
import { type Verdict, verdicts } from './outcome.ts';
import type { RecordRun } from './record-run.ts';
import { type ResolvedPayload, resolvePayload } from './resolve-payload.ts';
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
 * A record that ended before its store was written (`settled`: its verdict), or the message its store applies
 * (`ready`): the record as decoded, the message with its payload read, and the store-free part of its handler's
 * context. `completedAlready` is true when the key was found COMPLETED with this request before its payload was
 * read: the payload was not read (the object may even be gone).
 *
 * @internal
 */
export type PreparedRecord =
  | { readonly kind: 'settled'; readonly verdict: Verdict }
  | {
      readonly kind: 'ready';
      readonly decoded: DecodedRecord;
      readonly message: DecodedRecord;
      readonly completedAlready: boolean;
      readonly context: MessageContext;
    };

/**
 * What a store gives {@link prepareRecord}.
 *
 * @internal
 */
export interface PrepareCollaborators {
  /** The record's payload when it was read already (per-batch mode reads its batch's payloads before its transaction). */
  readonly resolved?: ResolvedPayload;
  /** True when the key is already COMPLETED with this request hash: one read of the store. */
  readonly completedAlready: (idempotencyKey: string, requestHash: string) => Promise<boolean>;
  /** The store's classification of its errors. */
  readonly classify: (error: unknown) => Failure;
  /** Settles a failure before the store's transaction: the attempt policy, the bookkeeping, the quarantine. */
  readonly settle: (failure: Failure) => Promise<Verdict>;
}

/**
 * The store-free steps of a record before its store is written, the same for every store: an undecodable record is
 * settled as terminal, a record whose attempt policy is not due yet waits (`notYetDue`), and a payload in S3 is read
 * and verified now, before any transaction (no database connection waits on S3), unless its key is COMPLETED with
 * this request already.
 *
 * @internal
 */
export async function prepareRecord(
  item: BatchRecord,
  run: RecordRun,
  deps: Pick<EngineSettings, 'consumer' | 'now' | 'payloads'>,
  store: PrepareCollaborators,
): Promise<PreparedRecord> {
  const { record, decoded } = item;
  const settled = (verdict: Verdict): PreparedRecord => ({ kind: 'settled', verdict });
  if (!decoded.ok) {
    return settled(
      await store.settle({
        retryable: false,
        code: decoded.code,
        message: decoded.message,
        connection: false,
      }),
    );
  }

  const dueInMs = msUntilDue(decoded.envelope.attemptPolicy, deps.now());
  if (dueInMs > 0) {
    const waitSeconds = Math.ceil(dueInMs / 1000);
    return settled(
      verdicts.notYetDue(
        decoded.envelope.attemptPolicy?.notBefore ?? undefined,
        waitSeconds,
        Math.min(waitSeconds, MAX_VISIBILITY_SECONDS),
      ),
    );
  }

  let message: DecodedRecord = decoded;
  let completedAlready = false;
  if (decoded.pendingRef) {
    let resolved = store.resolved;
    if (!resolved) {
      try {
        completedAlready = await run.timed(() =>
          store.completedAlready(decoded.envelope.idempotencyKey, decoded.requestHash),
        );
      } catch (error) {
        return settled(await store.settle(store.classify(error)));
      }
      resolved = completedAlready
        ? { ok: true, decoded }
        : await resolvePayload(decoded, deps.payloads, run.batch.remainingMs() - HANDLER_MARGIN_MS);
    }
    if (!resolved.ok) return settled(await store.settle(resolved.failure));
    message = resolved.decoded;
  }
  return {
    kind: 'ready',
    decoded,
    message,
    completedAlready,
    context: {
      consumer: deps.consumer,
      payload: message.payload,
      ...(message.document ? { document: message.document } : {}),
      envelope: message.envelope,
      record,
    },
  };
}
