import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SQSBatchResponse } from 'aws-lambda';
import { describe, expect, it, onTestFinished } from 'vitest';
import { z } from 'zod';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { BatchFailedError } from '../../lambda/errors.ts';
import { createSql } from '../../lambda/postgres/db.ts';
import { defineHandler } from '../../lambda/stores/postgres/message-handler.ts';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import type { RecordOutcome } from '../../lambda/worker/outcome.ts';
import { createTestDatabase } from '../support/database.ts';
import { proxiedDatabase } from '../support/proxied-database.ts';
import { envelopeFactory, lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';
import { alwaysRetryable } from '../support/test-handlers.ts';
import { exampleWorker } from '../support/test-worker.ts';

const db = await createTestDatabase();

/** `SlowCall`: waits `waitMs` outside the database (a slow HTTP call), then writes its ledger row. */
const slowCall = defineHandler({
  messageType: 'SlowCall',
  schemaVersion: 1,
  payload: z.object({ paymentId: z.string(), waitMs: z.number().int().min(0) }),
  async handle({ sql, payload }) {
    await sleep(payload.waitMs);
    await sql`
      insert into ledger_entries (entry_id, account_id, amount, currency, source_event_id)
      values (${payload.paymentId}, 'ACC-SLOW', 1, 'EUR', ${payload.paymentId})
    `;
    return { resultRef: `ledger_entries/${payload.paymentId}` };
  },
});
const handlers = [...exampleHandlers, slowCall, alwaysRetryable];

/** The Lambda function timeout of every invocation below: a warm environment gets the same each time. */
const TIMEOUT_MS = 4000;

const payment = () => {
  const paymentId = `PAY-${randomUUID()}`;
  return envelopeFactory({
    idempotencyKey: `payment:${paymentId}`,
    aggregateId: paymentId,
    payload: { paymentId, accountId: 'ACC-1', amount: '5.00', currency: 'EUR' },
  });
};
const paymentId = (envelope: Envelope) => (envelope.payload as { paymentId: string }).paymentId;
const ledgerRows = async (envelopes: readonly Envelope[]) =>
  db.sql<{ source_event_id: string; n: number }[]>`
    select source_event_id, count(*)::int as n from ledger_entries
    where source_event_id in ${db.sql(envelopes.map(paymentId))} group by source_event_id
  `;
/** The failure codes of an invocation that threw `BatchFailedError`, or the reported records of one that did not. */
const failed = (result: SQSBatchResponse | unknown) =>
  result instanceof BatchFailedError
    ? result.message
    : (result as SQSBatchResponse).batchItemFailures.map((failure) => failure.itemIdentifier).join(', ');

describe.each(['per-message', 'per-batch'] as const)(
  'A warm environment after a timeout, commitMode %s',
  (commitMode) => {
    it('processes the next invocation normally after a record outlived its handler budget (HANDLER_TIMEOUT)', async () => {
      // Prepare: one environment (one handler), one record whose call takes longer than the invocation has.
      const outcomes: RecordOutcome[] = [];
      const worker = exampleWorker(db.client({ max: 1 }), {
        commitMode,
        handlers,
        onOutcome: (outcome) => outcomes.push(outcome),
      });
      const id = `SLOW-${randomUUID()}`;
      const slow = envelopeFactory({
        messageType: 'SlowCall',
        idempotencyKey: `slow:${id}`,
        payload: { paymentId: id, waitMs: 2 * TIMEOUT_MS },
      });
      const good = [payment(), payment(), payment()];
      // Per batch: an environment whose batches run with a savepoint per record, as after any failure: the timed-out
      // record's attempt is then counted in its own savepoint.
      const failing = envelopeFactory({ messageType: 'AlwaysRetryable', payload: {} });
      if (commitMode === 'per-batch') {
        await worker(sqsEvent([sqsRecordFactory(failing)]), lambdaContext(TIMEOUT_MS)).catch(() => {});
      }

      // Act
      const first = await worker(sqsEvent([sqsRecordFactory(slow)]), lambdaContext(TIMEOUT_MS)).catch(
        (error: unknown) => error,
      );
      outcomes.length = 0;
      const next = await worker(
        sqsEvent(good.map((envelope) => sqsRecordFactory(envelope))),
        lambdaContext(TIMEOUT_MS),
      ).catch((error: unknown) => error);

      // Assess: the slow record was given up on; every good payment of the next invocation is applied once.
      expect(first).toBeInstanceOf(BatchFailedError);
      expect(failed(next)).toBe('');
      expect(outcomes.map((outcome) => outcome.result)).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED']);
      expect(await ledgerRows(good)).toHaveLength(3);
    });

    it('processes the next invocation normally after the database stopped answering (DATABASE_TIMEOUT) and came back', async () => {
      // Prepare: the worker's one connection, made the way the deployed worker makes it, through a proxy that can
      // go silent: connections stay open, nothing is forwarded (a hung host).
      const { proxy, url } = await proxiedDatabase(db.url);
      const sql = createSql({ kind: 'url', url, poolSize: 1 }, { applicationName: 'warm-after-timeout' });
      onTestFinished(async () => {
        await sql.end({ timeout: 0 }).catch(() => {});
        await proxy.close();
      });
      const outcomes: RecordOutcome[] = [];
      const worker = exampleWorker(sql, { commitMode, onOutcome: (outcome) => outcomes.push(outcome) });
      const warm = payment();
      const caught = payment();
      const good = [payment(), payment(), payment()];
      await worker(sqsEvent([sqsRecordFactory(warm)]), lambdaContext(TIMEOUT_MS));

      // Act: an invocation while the database is silent, then one after it answers again.
      outcomes.length = 0;
      proxy.stall();
      const silent = await worker(sqsEvent([sqsRecordFactory(caught)]), lambdaContext(TIMEOUT_MS)).catch(
        (error: unknown) => error,
      );
      const silentCodes = outcomes.map((outcome) => outcome.failureCode);
      proxy.up();
      outcomes.length = 0;
      const next = await worker(
        sqsEvent(
          [caught, ...good].map((envelope, index) =>
            sqsRecordFactory(envelope, { receiveCount: index === 0 ? 2 : 1 }),
          ),
        ),
        lambdaContext(TIMEOUT_MS),
      ).catch((error: unknown) => error);

      // Assess: the silent invocation reported its record before the timeout; the next one applies every payment
      // once, the reported one included.
      expect(silent).toBeInstanceOf(BatchFailedError);
      expect(silentCodes).toEqual([commitMode === 'per-batch' ? 'BATCH_COMMIT_FAILED' : 'DATABASE_TIMEOUT']);
      expect(failed(next)).toBe('');
      expect(outcomes.map((outcome) => outcome.result)).toEqual([
        'COMPLETED',
        'COMPLETED',
        'COMPLETED',
        'COMPLETED',
      ]);
      expect((await ledgerRows([warm, caught, ...good])).map((row) => row.n)).toEqual([1, 1, 1, 1, 1]);
    });
  },
);
