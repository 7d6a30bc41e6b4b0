import { performance } from 'node:perf_hooks';
import type { SQSRecord } from 'aws-lambda';
import type postgres from 'postgres';
import { requestHash } from '../../lambda/worker/request-hash.ts';
import { applyDeadline, type DeadlineEnvelope } from './deadline-statement.ts';

/**
 * A claimed row: its status and hash, and whether this claim inserted it.
 *
 * @internal
 */
export interface ClaimRow {
  idempotency_key: string;
  status: string;
  request_hash: string;
  inserted: boolean;
}

/**
 * The minimal baseline: the smallest correct inbox transaction a careful engineer would write by hand with the
 * worker's driver settings (postgres.js, `prepare: false`), one per message. One claim inserts the inbox row
 * already COMPLETED — a failure later in the transaction rolls it back — and on a conflict locks the existing
 * row and returns its status and hash; then the domain statement; then COMMIT: 6 round trips (BEGIN, the claim
 * and the domain statement two each, COMMIT). A redelivery of a row that is not COMPLETED (an earlier attempt
 * failed) applies the effect and completes the row with one more statement; a COMPLETED row is a duplicate; a
 * reused key with another hash is left alone. No result reference, attempt counting, in-flight detection,
 * validation or telemetry: the engine's cost is the difference to this.
 *
 * @returns the time of each message's transaction (parse included), in milliseconds.
 */
export async function minimalBaseline(sql: postgres.Sql, consumer: string, records: readonly SQSRecord[]) {
  const latencies: number[] = [];
  for (const record of records) {
    const started = performance.now();
    const envelope = JSON.parse(record.body) as DeadlineEnvelope;
    const hash = requestHash(envelope);
    await sql.begin(async (tx) => {
      const [claim] = await tx<ClaimRow[]>`
        insert into worker_inbox (
          consumer, idempotency_key, message_type, schema_version, aggregate_type, aggregate_id,
          status, request_hash, started_at, completed_at, receive_count, last_message_id, correlation_id
        )
        values (
          ${consumer}, ${envelope.idempotencyKey}, ${envelope.messageType}, ${envelope.schemaVersion}::int,
          ${envelope.aggregateType}, ${envelope.aggregateId}, 'COMPLETED', ${hash}, now(), now(), 1,
          ${record.messageId}, ${envelope.correlationId ?? null}
        )
        on conflict (consumer, idempotency_key) do update set last_seen_at = now()
        returning idempotency_key, status, request_hash, (xmax = 0) as inserted
      `;
      if (!claim || (!claim.inserted && (claim.status === 'COMPLETED' || claim.request_hash !== hash)))
        return;
      await applyDeadline(tx, envelope);
      if (!claim.inserted) {
        await tx`
          update worker_inbox set status = 'COMPLETED', completed_at = now()
          where consumer = ${consumer} and idempotency_key = ${envelope.idempotencyKey}
        `;
      }
    });
    latencies.push(performance.now() - started);
  }
  return latencies;
}
