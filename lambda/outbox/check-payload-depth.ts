import { jsonDepth, MAX_PAYLOAD_DEPTH } from '../worker/json-depth.ts';
import { InvalidOutboxEnvelopeError } from './errors.ts';

/**
 * Refuses an envelope whose inline payload nests deeper than {@link MAX_PAYLOAD_DEPTH} levels of objects and
 * arrays: the worker would quarantine it as `PAYLOAD_TOO_DEEP`, so it is refused where the producer can still fix
 * it. Counted without recursion, and no further than one level past the bound, so any value is cheap to refuse.
 *
 * @throws InvalidOutboxEnvelopeError naming the bound and the fix.
 *
 * @internal
 */
export function checkPayloadDepth(envelope: { idempotencyKey: string; payload?: unknown }): void {
  if (envelope.payload === undefined || jsonDepth(envelope.payload, MAX_PAYLOAD_DEPTH) <= MAX_PAYLOAD_DEPTH)
    return;
  throw new InvalidOutboxEnvelopeError(
    `Outbox envelope ${envelope.idempotencyKey}: its payload nests more than ${MAX_PAYLOAD_DEPTH} levels of objects and arrays, the bound the worker accepts (it would quarantine the message as PAYLOAD_TOO_DEEP); flatten the payload`,
  );
}
