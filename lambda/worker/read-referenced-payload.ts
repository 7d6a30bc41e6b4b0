import type { Failure } from './classify-error.ts';
import { HANDLER_MARGIN_MS } from './deadline-margins.ts';
import type { DecodedRecord } from './decode-record.ts';
import type { ReferencedPayload, StoreCalls } from './record-store.ts';
import { type PayloadReader, resolvePayload } from './resolve-payload.ts';

/**
 * What {@link readReferencedPayload} needs of a store.
 *
 * @internal
 */
export interface PayloadLookup {
  /** True when the key is already COMPLETED with this request hash: one read of the store. */
  completedAlready(idempotencyKey: string, requestHash: string): Promise<boolean>;
  /** The store's classification of the read's errors. */
  classify(error: unknown): Failure;
  /** Reads `payloadRef` payloads (see `resolve-payload.ts`). */
  readonly payloads: PayloadReader;
}

/**
 * A store's usual `RecordStore.referencedPayload`: one read of the key first, so a duplicate of a completed message
 * is acknowledged without reading S3 again (the object may even be gone); else the object read and verified within
 * the time left less the handler's margin. A failed lookup is the record's failure.
 *
 * @internal
 */
export async function readReferencedPayload(
  decoded: DecodedRecord,
  calls: StoreCalls,
  lookup: PayloadLookup,
): Promise<ReferencedPayload> {
  let completedAlready: boolean;
  try {
    completedAlready = await calls.timed(() =>
      lookup.completedAlready(decoded.envelope.idempotencyKey, decoded.requestHash),
    );
  } catch (error) {
    return { ok: false, failure: lookup.classify(error) };
  }
  if (completedAlready) return { ok: true, decoded, completedAlready };
  const resolved = await resolvePayload(decoded, lookup.payloads, calls.remainingMs() - HANDLER_MARGIN_MS);
  return resolved.ok ? { ...resolved, completedAlready } : resolved;
}
