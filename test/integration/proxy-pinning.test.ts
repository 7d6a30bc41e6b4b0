import { randomUUID } from 'node:crypto';
import type { SendMessageBatchCommand, SendMessageBatchCommandOutput, SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { TerminalError } from '../../lambda/errors.ts';
import { enqueueOutbox } from '../../lambda/outbox/index.ts';
import { relayOutbox } from '../../lambda/outbox/relay-outbox.ts';
import { claimInbox } from '../../lambda/stores/postgres/inbox.ts';
import { defineHandler } from '../../lambda/stores/postgres/message-handler.ts';
import { requestHash } from '../../lambda/worker/request-hash.ts';
import { pinningReasons } from '../../tools/bench/pinning-conditions.ts';
import { systemClock } from '../../tools/ops/clock.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { inboxPurge } from '../../tools/ops/stores/postgres/inbox-purge.ts';
import { quarantineRelease } from '../../tools/ops/stores/postgres/quarantine-release.ts';
import { rearmInbox } from '../../tools/ops/stores/postgres/rearm-inbox.ts';
import { finishAudit, recordAudit } from '../../tools/ops/stores/postgres/record-audit.ts';
import { createTestDatabase } from '../support/database.ts';
import { seedOpsState } from '../support/ops-state.ts';
import {
  caseStageEnvelope,
  envelopeFactory,
  lambdaContext,
  sqsEvent,
  sqsRecordFactory,
} from '../support/sqs-event.ts';
import { alwaysRetryable } from '../support/test-handlers.ts';
import { exampleWorker } from '../support/test-worker.ts';

const db = await createTestDatabase();

/** A client like the deployed ones (`prepare: false`) that records every statement text it sends. */
const recordingClient = (statements: string[]) =>
  db.client({
    max: 2,
    prepare: false,
    debug: (_connection, query) => statements.push(query.replace(/\s+/g, ' ').trim()),
  });

/** The statements that meet a pinning condition, with the conditions. */
const pinning = (statements: readonly string[]) =>
  statements
    .map((statement) => ({ statement, reasons: pinningReasons(statement) }))
    .filter((found) => found.reasons.length > 0);

const terminalOnPurpose = defineHandler({
  messageType: 'TerminalOnPurpose',
  schemaVersion: 1,
  payload: z.object({}),
  async handle() {
    throw new TerminalError('REJECTED_ON_PURPOSE', 'this message can never succeed');
  },
});

/** An SQS stand-in for SendMessageBatch: accepts every entry, or fails the call. */
const batchSender = (accept: boolean) => ({
  async send(command: SendMessageBatchCommand): Promise<SendMessageBatchCommandOutput> {
    if (!accept)
      throw Object.assign(new Error('injected: SQS is unavailable'), { name: 'ServiceUnavailable' });
    const entries = command.input.Entries ?? [];
    return {
      Successful: entries.map((entry) => ({ Id: entry.Id, MessageId: randomUUID(), MD5OfMessageBody: '' })),
      Failed: [],
      $metadata: {},
    } as SendMessageBatchCommandOutput;
  },
});

describe('Function: pinningReasons() (the check itself)', () => {
  it.each([
    ["select set_config('lock_timeout', '1000ms', true)", 'set_config'],
    ['set lock_timeout = 1000', 'SET'],
    ['SET LOCAL statement_timeout = 5', 'SET'],
    ['reset all', 'RESET'],
    ['select pg_advisory_lock(42)', 'session-level advisory lock'],
    ['select pg_try_advisory_lock(42)', 'session-level advisory lock'],
    ['listen outbox', 'LISTEN'],
    ['prepare q as select 1', 'prepared statement command'],
    ['create temp table t (x int)', 'temporary table, sequence or view'],
    ['declare c cursor with hold for select 1', 'DECLARE cursor'],
    ["select nextval('s')", 'sequence function'],
    [`select '${'x'.repeat(17_000)}'`, 'statement text above 16 KB'],
  ])('flags %s', (statement, reason) => {
    expect(pinningReasons(statement)).toContain(reason);
  });

  it('flags a Parse that names its statement (postgres.js with prepare: true)', () => {
    expect(pinningReasons({ text: 'select $1::int', name: 's1' })).toEqual(['named prepared statement']);
    expect(pinningReasons({ text: 'select $1::int', name: '' })).toEqual([]);
  });

  it('does not flag a transaction-level advisory lock or an UPDATE … SET', () => {
    expect(pinningReasons('select pg_try_advisory_xact_lock(42)')).toEqual([]);
    expect(pinningReasons("update worker_inbox set status = 'COMPLETED' where consumer = $1")).toEqual([]);
  });
});

describe.each(['per-message', 'per-batch'] as const)(
  'No statement of the worker meets an RDS Proxy pinning condition, commitMode %s',
  (commitMode) => {
    it('sends none on success, duplicate, in-flight copy, retryable failure with bookkeeping, and terminal failure with quarantine', async () => {
      // Prepare
      const statements: string[] = [];
      const sql = recordingClient(statements);
      const worker = exampleWorker(sql, {
        commitMode,
        handlers: [...exampleHandlers, alwaysRetryable, terminalOnPurpose],
        failInvocationOnFullBatchFailure: false,
      });
      const payments = [envelopeFactory(), envelopeFactory()];
      const inFlight = envelopeFactory();
      const retryable = envelopeFactory({ messageType: 'AlwaysRetryable', payload: {} });
      const terminal = envelopeFactory({ messageType: 'TerminalOnPurpose', payload: {} });
      const holder = db.client({ max: 1 });
      let release: () => void = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const claimed = new Promise<void>((resolve) => {
        void holder.begin(async (tx) => {
          await claimInbox(tx, {
            consumer: 'case-worker',
            envelope: inFlight as never,
            requestHash: requestHash(inFlight as never),
            sqsMessageId: 'in-flight-copy',
          });
          resolve();
          await held;
        });
      });
      await claimed;

      // Act: a clean batch; the same batch again (duplicates); a batch with a copy in flight elsewhere, a
      // retryable failure, a handler's TerminalError, a body that is no envelope, and a reused key.
      const clean = payments.map((envelope) => sqsRecordFactory(envelope));
      const first = await worker(sqsEvent(clean), lambdaContext());
      const again = await worker(sqsEvent(clean), lambdaContext());
      const mixed = await worker(
        sqsEvent([
          sqsRecordFactory(inFlight),
          sqsRecordFactory(retryable),
          sqsRecordFactory(terminal),
          sqsRecordFactory('not an envelope'),
          sqsRecordFactory({
            ...payments[0],
            payload: { ...(payments[0]?.payload as object), amount: '99.00' },
          }),
          sqsRecordFactory(envelopeFactory()),
        ]),
        lambdaContext(),
      );
      release();

      // Assess: the paths ran (so their statements were recorded) and none of their statements pins.
      expect(first.batchItemFailures).toEqual([]);
      expect(again.batchItemFailures).toEqual([]);
      expect(mixed.batchItemFailures.map((failure) => failure.itemIdentifier)).toHaveLength(2);
      const quarantined = await db.sql`
        select reason_code from worker_quarantine where consumer = 'case-worker' order by reason_code
      `;
      expect(quarantined.map((row) => row.reason_code)).toEqual(
        expect.arrayContaining(['IDEMPOTENCY_HASH_MISMATCH', 'INVALID_JSON', 'REJECTED_ON_PURPOSE']),
      );
      expect(statements.some((statement) => statement.includes('pg_try_advisory_xact_lock'))).toBe(true);
      expect(statements.some((statement) => statement.startsWith('insert into worker_quarantine'))).toBe(
        true,
      );
      expect(pinning(statements)).toEqual([]);
    });
  },
);

describe('No statement of the outbox relay or the ops commands meets an RDS Proxy pinning condition', () => {
  it('sends none when enqueueing, publishing, failing a send, and marking rows', async () => {
    // Prepare
    const statements: string[] = [];
    const sql = recordingClient(statements);
    const queueUrl = 'https://sqs.eu-west-1.amazonaws.com/000000000000/worker';
    await sql.begin(async (tx) => {
      await enqueueOutbox(tx, caseStageEnvelope(`CASE-${randomUUID()}`, 1));
      await enqueueOutbox(tx, caseStageEnvelope(`CASE-${randomUUID()}`, 1));
    });

    // Act: a round whose send fails (the rows are marked for a retry), then one that publishes.
    const failed = await relayOutbox({
      sql,
      sqs: batchSender(false),
      queueUrl,
      deadline: Date.now() + 10_000,
      backoff: { baseMs: 1, maxMs: 1 },
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const published = await relayOutbox({
      sql,
      sqs: batchSender(true),
      queueUrl,
      deadline: Date.now() + 10_000,
    });

    // Assess
    expect(failed.failed).toBeGreaterThanOrEqual(2);
    expect(published.published).toBeGreaterThanOrEqual(2);
    expect(statements.some((statement) => statement.startsWith('update outbox_events'))).toBe(true);
    expect(pinning(statements)).toEqual([]);
  });

  it('sends none when rearming, purging and releasing with an audit trail', async () => {
    // Prepare: a failed inbox row, an old completed one, and a quarantined message with its key.
    const statements: string[] = [];
    const sql = recordingClient(statements);
    const { consumer, failedKey, quarantineId } = await seedOpsState(db.sql);
    const sqs = { send: async () => ({ MessageId: randomUUID(), $metadata: {} }) } as unknown as SQSClient;

    // Act: the statements of `dlq redrive --rearm`, `inbox purge` and `quarantine release`.
    const auditId = await recordAudit(sql, { action: 'test_rearm', outcome: 'STARTED', consumer });
    const rearmed = await rearmInbox(sql, { consumer, idempotencyKey: failedKey });
    await finishAudit(sql, auditId, { outcome: 'DONE', detail: { rearmed: rearmed.rearmed } });
    const purged = await inboxPurge(
      { sql, out: createMemoryOutput(), clock: systemClock },
      {
        consumer,
        olderThanSeconds: 20 * 86_400,
        sourceRetentionSeconds: 4 * 86_400,
        dlqRetentionSeconds: 14 * 86_400,
      },
    );
    await quarantineRelease(
      { sql, sqs, out: createMemoryOutput() },
      { quarantineId: quarantineId ?? '', queueUrl: 'https://sqs.local/q', consumer },
    );

    // Assess
    expect(rearmed.rearmed).toBe(true);
    expect(purged.deleted).toBe(1);
    expect(statements.some((statement) => statement.startsWith('insert into ops_audit'))).toBe(true);
    expect(pinning(statements)).toEqual([]);
  });
});
