import { performance } from 'node:perf_hooks';
import type { SQSRecord } from 'aws-lambda';
import type postgres from 'postgres';
import { INBOX_LOCK_SEED } from '../../lambda/stores/postgres/inbox.ts';
import { recordTrace } from '../../lambda/tracing/record-trace.ts';
import { requestHash } from '../../lambda/worker/request-hash.ts';
import { applyDeadline, type DeadlineEnvelope } from './deadline-statement.ts';

/**
 * The raw baseline: the SQL the `CaseDeadlineCalculationRequested` path writes, statement for statement (a
 * test compares the texts) — the inbox claim that stores a new key COMPLETED with its result reference
 * (insert … select … where pg_try_advisory_xact_lock(…) on conflict … returning), the deadline CTE — in one
 * hand-written postgres.js transaction per message, records one after another. No envelope validation, routing, policy,
 * client-side deadline or telemetry: what the engine costs is the difference to this.
 *
 * @returns the time of each message's transaction (parse included), in milliseconds.
 */
export async function rawBaseline(sql: postgres.Sql, consumer: string, records: readonly SQSRecord[]) {
  const latencies: number[] = [];
  for (const record of records) {
    const started = performance.now();
    const envelope = JSON.parse(record.body) as DeadlineEnvelope;
    const hash = requestHash(envelope);
    const resultRef = `case_deadlines/${envelope.payload.caseId}/${envelope.payload.stage}_SLA`;
    await sql.begin(async (tx) => {
      const [claim] = await tx<{ status: string; inserted: boolean }[]>`
    insert into worker_inbox (
      consumer, idempotency_key, message_type, schema_version, aggregate_type, aggregate_id,
      status, request_hash, started_at, completed_at, result_ref, receive_count, last_message_id, correlation_id,
      trace_id
    )
    select
      ${consumer}, ${envelope.idempotencyKey}, ${envelope.messageType}, ${envelope.schemaVersion}::int, ${envelope.aggregateType},
      ${envelope.aggregateId}, 'COMPLETED', ${hash}, now(), now(), ${resultRef}, 1,
      ${record.messageId}, ${envelope.correlationId ?? null}, ${recordTrace(record)?.traceId ?? null}
    where pg_try_advisory_xact_lock(
      hashtextextended(${consumer}::text || chr(31) || ${envelope.idempotencyKey}::text, ${INBOX_LOCK_SEED})
    )
    on conflict (consumer, idempotency_key) do update
      set last_seen_at = now(),
          receive_count = worker_inbox.receive_count + 1,
          last_message_id = excluded.last_message_id,
          trace_id = case when worker_inbox.status = 'COMPLETED' then worker_inbox.trace_id
            else coalesce(excluded.trace_id, worker_inbox.trace_id) end
    returning status, request_hash, receive_count, (xmax = 0) as inserted, failure_code
  `;
      // A new key is stored COMPLETED by the claim (undone by a rollback); the bench sends no redeliveries.
      if (!claim?.inserted) return;
      await applyDeadline(tx, envelope);
    });
    latencies.push(performance.now() - started);
  }
  return latencies;
}
