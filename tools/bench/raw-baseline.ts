import { performance } from 'node:perf_hooks';
import type { SQSRecord } from 'aws-lambda';
import type postgres from 'postgres';
import { INBOX_LOCK_SEED } from '../../lambda/worker/inbox.ts';
import { recordTrace } from '../../lambda/worker/record-trace.ts';
import { requestHash } from '../../lambda/worker/request-hash.ts';

const DAY_MS = 86_400_000;
const INVESTIGATION_SLA_DAYS = 30;

interface DeadlineEnvelope {
  messageId: string;
  messageType: string;
  schemaVersion: number;
  idempotencyKey: string;
  aggregateType: string;
  aggregateId: string;
  correlationId?: string;
  payload: { caseId: string; stage: string; effectiveAt: string };
}

/**
 * The raw baseline: the SQL the `CaseDeadlineCalculationRequested` path writes, statement for statement (a
 * test compares the texts) — the inbox claim (insert … select … where pg_try_advisory_xact_lock(…) on
 * conflict … returning), the deadline CTE, the COMPLETED update — in one hand-written
 * postgres.js transaction per message, records one after another. No envelope validation, routing, policy,
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
    const { caseId, stage, effectiveAt } = envelope.payload;
    const deadlineType = `${stage}_SLA`;
    const effectiveAtDate = new Date(Date.parse(effectiveAt));
    const deadlineAt = new Date(effectiveAtDate.getTime() + INVESTIGATION_SLA_DAYS * DAY_MS);
    await sql.begin(async (tx) => {
      const [claim] = await tx<{ status: string; request_hash: string }[]>`
        insert into worker_inbox (
          consumer, idempotency_key, message_type, schema_version, aggregate_type, aggregate_id,
          status, request_hash, started_at, receive_count, last_message_id, correlation_id, trace_id
        )
        select
          ${consumer}, ${envelope.idempotencyKey}, ${envelope.messageType}, ${envelope.schemaVersion}::int, ${envelope.aggregateType},
          ${envelope.aggregateId}, 'PROCESSING', ${hash}, now(), 1, ${record.messageId}, ${envelope.correlationId ?? null},
          ${recordTrace(record)?.traceId ?? null}
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
      if (claim?.status === 'COMPLETED') return;
      await tx`
      with updated_case as (
        update cases
        set deadline_at = ${deadlineAt}, deadline_effective_at = ${effectiveAtDate},
            deadline_version = deadline_version + 1
        where case_id = ${caseId}
          and (deadline_effective_at is null or deadline_effective_at <= ${effectiveAtDate})
        returning case_id
      ),
      upserted as (
        insert into case_deadlines (case_id, deadline_type, deadline_at, source_event_id)
        select case_id, ${deadlineType}, ${deadlineAt}, ${envelope.messageId} from updated_case
        on conflict (case_id, deadline_type) do update
          set deadline_at = excluded.deadline_at, source_event_id = excluded.source_event_id, updated_at = now()
        returning case_id
      )
      select exists (select 1 from cases where case_id = ${caseId}) as found,
             exists (select 1 from upserted) as applied
    `;
      await tx`
        update worker_inbox
        set status = 'COMPLETED', completed_at = now(), result_ref = ${`case_deadlines/${caseId}/${deadlineType}`},
            started_at = coalesce(started_at, now()), failure_code = null, failure_message = null
        where consumer = ${consumer} and idempotency_key = ${envelope.idempotencyKey}
      `;
    });
    latencies.push(performance.now() - started);
  }
  return latencies;
}
