import { performance } from 'node:perf_hooks';
import type { SQSRecord } from 'aws-lambda';
import type postgres from 'postgres';
import { requestHash } from '../../lambda/worker/request-hash.ts';
import { applyDeadline, type DeadlineEnvelope } from './deadline-statement.ts';
import type { ClaimRow } from './minimal-baseline.ts';

/**
 * The minimal baseline's batch form, for per-batch mode: one transaction per batch with one claim statement for
 * the batch's keys (rows inserted COMPLETED, in key order so that two batches cannot deadlock; a conflict locks
 * the existing row and returns its status and hash), each record's domain statement, one COMMIT, no savepoints:
 * 2 + 2 + 2 × records round trips per batch (2.4 per message for batches of 10). A failure rolls the whole batch
 * back. Keys must be unique within the batch.
 *
 * @returns the batch's time divided among its records, in milliseconds.
 */
export async function minimalBatchBaseline(
  sql: postgres.Sql,
  consumer: string,
  records: readonly SQSRecord[],
) {
  const started = performance.now();
  const envelopes = records.map((record) => JSON.parse(record.body) as DeadlineEnvelope);
  const hashes = envelopes.map((envelope) => requestHash(envelope));
  const column = <T>(pick: (envelope: DeadlineEnvelope, index: number) => T) => envelopes.map(pick);
  await sql.begin(async (tx) => {
    const claimed = await tx<ClaimRow[]>`
      insert into worker_inbox (
        consumer, idempotency_key, message_type, schema_version, aggregate_type, aggregate_id,
        status, request_hash, started_at, completed_at, receive_count, last_message_id, correlation_id
      )
      select ${consumer}, r.k, r.t, r.v, r.at, r.ai, 'COMPLETED', r.h, now(), now(), 1, r.m, nullif(r.c, '')
      from unnest(
        ${column((e) => e.idempotencyKey)}::text[],
        ${column((e) => e.messageType)}::text[],
        ${column((e) => e.schemaVersion)}::int[],
        ${column((e) => e.aggregateType)}::text[],
        ${column((e) => e.aggregateId)}::text[],
        ${hashes}::text[],
        ${records.map((record) => record.messageId)}::text[],
        ${column((e) => e.correlationId ?? '')}::text[]
      ) as r(k, t, v, at, ai, h, m, c)
      order by r.k
      on conflict (consumer, idempotency_key) do update set last_seen_at = now()
      returning idempotency_key, status, request_hash, (xmax = 0) as inserted
    `;
    const byKey = new Map(claimed.map((row) => [row.idempotency_key, row]));
    const redone: string[] = [];
    for (const [index, envelope] of envelopes.entries()) {
      const claim = byKey.get(envelope.idempotencyKey);
      if (
        !claim ||
        (!claim.inserted && (claim.status === 'COMPLETED' || claim.request_hash !== hashes[index]))
      )
        continue;
      await applyDeadline(tx, envelope);
      if (!claim.inserted) redone.push(envelope.idempotencyKey);
    }
    if (redone.length > 0) {
      await tx`
        update worker_inbox set status = 'COMPLETED', completed_at = now()
        where consumer = ${consumer} and idempotency_key = any(${redone}::text[])
      `;
    }
  });
  const perRecord = (performance.now() - started) / records.length;
  return records.map(() => perRecord);
}
