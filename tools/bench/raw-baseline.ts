import { performance } from 'node:perf_hooks';
import type { SQSRecord } from 'aws-lambda';
import type postgres from 'postgres';
import { claimInbox } from '../../lambda/stores/postgres/inbox.ts';
import { recordTrace } from '../../lambda/tracing/record-trace.ts';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import { requestHash } from '../../lambda/worker/request-hash.ts';
import { UNVERSIONED } from '../../lambda/worker-version.ts';
import { applyDeadline, type DeadlineEnvelope } from './deadline-statement.ts';

/**
 * The raw baseline: the SQL the `CaseDeadlineCalculationRequested` path writes, statement for statement (a
 * test compares the texts) — the inbox claim that stores a new key COMPLETED with its result reference (the store's
 * `claimInbox`: insert … select … where pg_try_advisory_xact_lock(…) on conflict … returning), the deadline CTE — in one
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
      // The store's own claim statement, so the baseline writes what the worker writes, text for text.
      const claim = await claimInbox(tx, {
        consumer,
        envelope: envelope as unknown as Envelope,
        requestHash: hash,
        sqsMessageId: record.messageId,
        resultRef,
        traceId: recordTrace(record)?.traceId,
        workerVersion: UNVERSIONED,
        receiveCount: Number(record.attributes.ApproximateReceiveCount),
      });
      // A new key is stored COMPLETED by the claim (undone by a rollback); the bench sends no redeliveries.
      if (!claim.inserted) return;
      await applyDeadline(tx, envelope);
    });
    latencies.push(performance.now() - started);
  }
  return latencies;
}
