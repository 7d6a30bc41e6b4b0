import type postgres from 'postgres';
import { parseXRayTraceHeader } from '../tracing/trace-context.ts';
import type { Envelope } from '../worker/envelope.ts';
import { OutboxConflictError, OutboxUsageError } from './errors.ts';
import type { PayloadOffloadTarget } from './offload-payload.ts';
import { prepareOutboxEnvelope } from './prepare-outbox-envelope.ts';

/** Options of {@link enqueueOutbox}. */
export interface EnqueueOutboxOptions {
  /**
   * The queue's `MaximumMessageSize`, 1024 – 1048576 bytes: a larger envelope is offloaded (with `offload`) or
   * refused. @default 1048576 (1 MiB)
   */
  readonly maxMessageBytes?: number;
  /**
   * Where to write a payload that would make the envelope larger than `offloadAboveBytes`: the payload goes to S3
   * and the row carries a `payloadRef` (see `offloadPayload`). Without it such an envelope is refused.
   */
  readonly offload?: PayloadOffloadTarget & {
    /** Envelope size (bytes, inline) above which the payload is offloaded. @default maxMessageBytes */
    readonly offloadAboveBytes?: number;
  };
  /**
   * The producer's trace context: an X-Ray trace header (`Root=1-…;Parent=…;Sampled=1`) or a W3C `traceparent`.
   * The relay sends it with the message (SQS `AWSTraceHeader` and a `traceparent` message attribute) and the
   * worker logs its trace id on the record's lines (docs/tracing.md). An invalid value is refused.
   * @default the invocation's X-Ray header in Lambda (`_X_AMZN_TRACE_ID`), else a new trace id made here, so
   *   every message can be followed
   */
  readonly trace?: string;
}

/** What {@link enqueueOutbox} did. */
export interface EnqueueOutboxResult {
  /** The outbox row id (the envelope's `messageId`, or the first one enqueued under this key). */
  readonly eventId: string;
  /** False when the key was already enqueued with the same content: the call was a no-op. */
  readonly inserted: boolean;
  /**
   * The X-Ray trace id (`1-…-…`) the message travels with: the one the worker logs and `inbox show` prints.
   * For a no-op, the first enqueue's (undefined for a row written before traces were recorded).
   */
  readonly traceId?: string;
}

/**
 * Writes an envelope to `outbox_events` inside the caller's transaction (pattern document §16): the event
 * commits if and only if the producer's state change commits, and the relay publishes it afterwards.
 *
 * - The envelope is validated with `envelopeSchema`, its payload may nest at most `MAX_PAYLOAD_DEPTH` (64) levels of
 *   objects and arrays, and it must serialize to at most `maxMessageBytes` (1 MiB, the SQS maximum), so a row that
 *   is stored can always be sent and processed. With `offload`, a payload that would make it
 *   larger than `offloadAboveBytes` is written to S3 first (content-addressed key, SHA-256 and versionId
 *   recorded) and the row carries the `payloadRef`; the worker reads and verifies it before its handler runs.
 *   The upload happens inside the caller's transaction: call `offloadPayload` before `sql.begin` to keep it out.
 * - Unique by `idempotencyKey`: enqueueing the same key again with the same messageType, schemaVersion and
 *   payload (same request hash as the consumer computes) is a no-op that returns `inserted: false`. The same key
 *   with different content throws {@link OutboxConflictError}: a key names one event, and the consumer would
 *   reject the second one as a hash mismatch anyway. A concurrent transaction enqueueing the same key waits
 *   for this one and then sees its row.
 * - Must be given the transaction (`sql.begin(async (sql) => …)`), never the pool: with the pool the event
 *   would commit on its own and could outlive a rolled-back state change.
 * - Records the trace the message travels with (`trace_header`): the caller's `trace`, else the Lambda invocation's
 *   X-Ray header, else a new trace id, so every message has one the worker logs (docs/tracing.md). A message
 *   may carry at most `maxMessageBytes` less the 72 bytes of the relay's `traceparent` attribute.
 *
 * @throws InvalidOutboxEnvelopeError when the envelope is invalid, too deep or too large.
 * @throws OutboxOffloadError when the payload could not be written to S3.
 * @throws OutboxConflictError when the key or messageId is taken by a different event.
 * @throws OutboxUsageError when `sql` is not a transaction, or `trace` is not a trace header.
 *
 * @example
 * ```ts
 * await sql.begin(async (sql) => {
 *   await sql`insert into cases (case_id, stage, version) values (${caseId}, 'OPEN', 1)`;
 *   await enqueueOutbox(sql, {
 *     messageId: randomUUID(),
 *     schemaVersion: 1,
 *     messageType: 'CaseDeadlineCalculationRequested',
 *     producer: 'case-service',
 *     occurredAt: new Date().toISOString(),
 *     idempotencyKey: `case-deadline:${caseId}:OPEN`,
 *     aggregateType: 'case',
 *     aggregateId: caseId,
 *     payload: { caseId, stage: 'OPEN', effectiveAt: new Date().toISOString() },
 *   });
 * });
 * ```
 */
export async function enqueueOutbox(
  sql: postgres.TransactionSql,
  envelope: Envelope,
  options: EnqueueOutboxOptions = {},
): Promise<EnqueueOutboxResult> {
  if (typeof (sql as { savepoint?: unknown }).savepoint !== 'function') {
    throw new OutboxUsageError(
      'enqueueOutbox must run inside the producer transaction: call it with the `sql` of `sql.begin(async (sql) => …)`, not the pool',
    );
  }
  const {
    envelope: valid,
    requestHash: hash,
    traceHeader,
    traceId,
  } = await prepareOutboxEnvelope(envelope, options);

  const inserted = await sql<{ event_id: string }[]>`
    insert into outbox_events (
      event_id, idempotency_key, message_type, schema_version, aggregate_type, aggregate_id, request_hash, envelope,
      trace_header
    )
    values (
      ${valid.messageId}, ${valid.idempotencyKey}, ${valid.messageType}, ${valid.schemaVersion},
      ${valid.aggregateType}, ${valid.aggregateId}, ${hash}, ${sql.json(valid as postgres.JSONValue)}, ${traceHeader}
    )
    on conflict do nothing
    returning event_id
  `;
  if (inserted.length === 1) {
    return { eventId: valid.messageId, inserted: true, traceId };
  }

  const [existing] = await sql<{ event_id: string; request_hash: string; trace_header: string | null }[]>`
    select event_id, request_hash, trace_header from outbox_events where idempotency_key = ${valid.idempotencyKey}
  `;
  if (!existing) {
    throw new OutboxConflictError(
      valid.idempotencyKey,
      `Outbox messageId ${valid.messageId} is already used by another event (idempotency key ${valid.idempotencyKey} is new); give every event a fresh messageId`,
    );
  }
  if (existing.request_hash !== hash) {
    throw new OutboxConflictError(
      valid.idempotencyKey,
      `Idempotency key ${valid.idempotencyKey} is already in the outbox (event ${existing.event_id}) with a different messageType, schemaVersion or payload; use a new key for a different event`,
    );
  }
  return {
    eventId: existing.event_id,
    inserted: false,
    traceId: parseXRayTraceHeader(existing.trace_header)?.traceId,
  };
}
