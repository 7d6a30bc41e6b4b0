import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { SQSRecord } from 'aws-lambda';
import type postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { type BatchBudget, createBatchEngine } from '../../lambda/runtimes/index.ts';
import type { WorkerOptions } from '../../lambda/runtimes/worker-options.ts';
import { defineHandler } from '../../lambda/stores/postgres/message-handler.ts';
import type { RecordOutcome } from '../../lambda/worker/outcome.ts';
import { createTestDatabase } from '../support/database.ts';
import { jsonWithNestedArrays, NESTED } from '../support/nested-json.ts';
import { envelopeFactory, sqsRecordFactory } from '../support/sqs-event.ts';
import { proxiedClient } from '../support/tcp-proxy.ts';
import { alwaysRetryable } from '../support/test-handlers.ts';

process.env.POWERTOOLS_METRICS_DISABLED = 'true';

const db = await createTestDatabase();

/** The budget a Lambda context would give: 30 s. */
const ample: BatchBudget = { remainingMs: () => 30_000 };

const payment = () => {
  const paymentId = `PAY-${randomUUID()}`;
  return envelopeFactory({
    idempotencyKey: `payment:${paymentId}`,
    aggregateId: paymentId,
    payload: { paymentId, accountId: 'ACC-1', amount: '5.00', currency: 'EUR' },
  });
};
const paymentId = (envelope: Record<string, unknown>) =>
  (envelope.payload as { paymentId: string }).paymentId;
const ledgerCount = async (envelopes: Record<string, unknown>[]) =>
  Number(
    (
      await db.sql`select count(*) from ledger_entries where source_event_id in ${db.sql(envelopes.map(paymentId))}`
    )[0]?.count,
  );
const inboxRow = async (key: string) =>
  (await db.sql`select * from worker_inbox where consumer = 'case-worker' and idempotency_key = ${key}`)[0];

/** An engine over the example domain that collects every outcome its `onOutcome` hook is given. */
const engineWith = (sql: postgres.Sql, overrides: Partial<WorkerOptions> = {}) => {
  const seen: RecordOutcome[] = [];
  const engine = createBatchEngine({
    consumer: 'case-worker',
    handlers: [...exampleHandlers, alwaysRetryable],
    sql,
    logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
    metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
    onOutcome: (outcome) => seen.push(outcome),
    // Jitter at its top: every backoff is at least 1 s.
    random: () => 0.99,
    ...overrides,
  });
  return { engine, seen };
};

describe.each(['per-message', 'per-batch'] as const)(
  'Function: createBatchEngine().processBatch(), commitMode %s',
  (commitMode) => {
    it('returns one outcome per record in the records’ order, and gives each to onOutcome once', async () => {
      // Prepare: two payments, a body that is not JSON, a message not due for an hour, a duplicate of a completed one.
      const done = payment();
      const { engine: warmup } = engineWith(db.sql, { commitMode });
      await warmup.processBatch([sqsRecordFactory(done)], ample);
      const [first, second] = [payment(), payment()];
      const later = envelopeFactory({
        ...payment(),
        attemptPolicy: { notBefore: new Date(Date.now() + 3_600_000).toISOString() },
      });
      const records = [
        sqsRecordFactory(first),
        sqsRecordFactory('not json'),
        sqsRecordFactory(later),
        sqsRecordFactory(done, { receiveCount: 2 }),
        sqsRecordFactory(second),
      ];
      const { engine, seen } = engineWith(db.sql, { commitMode });

      // Act
      const result = await engine.processBatch(records, ample);

      // Assess
      expect(result.databaseDown).toBe(false);
      expect(result.outcomes.map((outcome) => outcome.messageId)).toEqual(
        records.map((record) => record.messageId),
      );
      expect(result.outcomes.map((outcome) => [outcome.result, outcome.acknowledged])).toEqual([
        ['COMPLETED', true],
        ['TERMINAL_FAILURE', true],
        ['NOT_YET_DUE', false],
        ['DUPLICATE', true],
        ['COMPLETED', true],
      ]);
      expect(result.outcomes[1]).toMatchObject({
        failureCode: 'INVALID_JSON',
        quarantined: true,
        receiveCount: 1,
      });
      expect(result.outcomes[2]?.visibilitySeconds).toBeGreaterThan(3500);
      expect(result.outcomes[3]?.receiveCount).toBe(2);
      expect(seen).toEqual(result.outcomes);
      expect(await ledgerCount([first, second, done])).toBe(3);
      expect(await inboxRow(later.idempotencyKey)).toBeUndefined();
    });

    it('applies the rest of the batch and quarantines a payload nested 5,000 levels deep (PAYLOAD_TOO_DEEP) with its raw body', async () => {
      // Prepare: a valid payment whose payload also carries 5,000 nested arrays (10 KB), between two good ones.
      const [first, second] = [payment(), payment()];
      const deep = payment();
      const deepBody = jsonWithNestedArrays({ ...deep, payload: { ...deep.payload, extra: NESTED } }, 5_000);
      const records = [sqsRecordFactory(first), sqsRecordFactory(deepBody), sqsRecordFactory(second)];
      const { engine, seen } = engineWith(db.sql, { commitMode });

      // Act
      const result = await engine.processBatch(records, ample);

      // Assess
      expect(result.outcomes.map((outcome) => [outcome.result, outcome.acknowledged])).toEqual([
        ['COMPLETED', true],
        ['TERMINAL_FAILURE', true],
        ['COMPLETED', true],
      ]);
      expect(result.outcomes[1]).toMatchObject({
        failureCode: 'PAYLOAD_TOO_DEEP',
        quarantined: true,
        idempotencyKey: deep.idempotencyKey,
      });
      expect(seen).toEqual(result.outcomes);
      expect(await ledgerCount([first, second])).toBe(2);
      expect(await ledgerCount([deep])).toBe(0);
      const quarantined = await db.sql`
        select reason_code, reason_message, idempotency_key, body from worker_quarantine
        where sqs_message_id = ${records[1]?.messageId ?? ''}
      `;
      expect(quarantined).toEqual([
        {
          reason_code: 'PAYLOAD_TOO_DEEP',
          reason_message: expect.stringContaining(
            'nests 5002 levels of objects and arrays, above the bound of 65',
          ),
          idempotency_key: deep.idempotencyKey,
          body: records[1]?.body,
        },
      ]);
    });

    it('calls onOutcome with the final outcomes only when a failure makes the batch run again', async () => {
      // Prepare: a failure in the middle of the batch (per-batch mode rolls its first attempt back and redoes it).
      const envelopes = [payment(), payment(), payment()];
      const failing = envelopeFactory({
        messageType: 'AlwaysRetryable',
        idempotencyKey: `r:${randomUUID()}`,
        payload: {},
      });
      const records = [envelopes[0], failing, envelopes[1], envelopes[2]].map((envelope) =>
        sqsRecordFactory(envelope),
      );
      const { engine, seen } = engineWith(db.sql, { commitMode });

      // Act
      const result = await engine.processBatch(records, ample);

      // Assess
      expect(seen.map((outcome) => outcome.messageId)).toEqual(records.map((record) => record.messageId));
      expect(seen.map((outcome) => outcome.result)).toEqual([
        'COMPLETED',
        'RETRYABLE_FAILURE',
        'COMPLETED',
        'COMPLETED',
      ]);
      expect(seen[1]).toMatchObject({ failureCode: 'DOWNSTREAM_UNAVAILABLE', attempts: 1 });
      expect(seen).toEqual(result.outcomes);
      expect(await ledgerCount(envelopes)).toBe(3);
      expect(await inboxRow(failing.idempotencyKey)).toMatchObject({
        status: 'FAILED_RETRYABLE',
        receive_count: 1,
      });
    });

    it('runs FIFO groups in order and blocks a group after its first failure with the blocker’s visibility', async () => {
      // Prepare: group A (a1, a2 fails, a3) and group B (b1, b2) on a .fifo queue.
      const fifoArn = 'arn:aws:sqs:us-east-1:000000000000:case-worker.fifo';
      const fifoRecord = (envelope: Record<string, unknown>, group: string): SQSRecord => {
        const record = sqsRecordFactory(envelope, { eventSourceARN: fifoArn });
        return { ...record, attributes: { ...record.attributes, MessageGroupId: group } };
      };
      const [a1, a3, b1, b2] = [payment(), payment(), payment(), payment()];
      const a2 = envelopeFactory({
        messageType: 'AlwaysRetryable',
        idempotencyKey: `a2:${randomUUID()}`,
        payload: {},
      });
      const records = [
        fifoRecord(a1, 'A'),
        fifoRecord(b1, 'B'),
        fifoRecord(a2, 'A'),
        fifoRecord(b2, 'B'),
        fifoRecord(a3, 'A'),
      ];
      const { engine, seen } = engineWith(db.sql, { commitMode });

      // Act
      const { outcomes } = await engine.processBatch(records, ample);

      // Assess
      expect(outcomes.map((outcome) => outcome.failureCode ?? outcome.result)).toEqual([
        'COMPLETED',
        'COMPLETED',
        'DOWNSTREAM_UNAVAILABLE',
        'COMPLETED',
        'FIFO_GROUP_BLOCKED',
      ]);
      expect(outcomes[4]).toMatchObject({ acknowledged: false, result: 'RETRYABLE_FAILURE' });
      expect(outcomes[4]?.visibilitySeconds).toBe(outcomes[2]?.visibilitySeconds);
      expect(outcomes[4]?.visibilitySeconds).toBeGreaterThan(0);
      expect(seen).toHaveLength(5);
      expect(await ledgerCount([a1, b1, b2])).toBe(3);
      expect(await ledgerCount([a3])).toBe(0);
      expect(await inboxRow(a3.idempotencyKey)).toBeUndefined();
    });

    it('reports the whole batch without throwing and says databaseDown when the database is unreachable', async () => {
      // Prepare: a client whose connections are refused from now on.
      const { proxy, sql, close } = await proxiedClient(db.url);
      const { engine, seen } = engineWith(sql, { commitMode });
      const envelopes = [payment(), payment(), payment()];
      const records = envelopes.map((envelope) => sqsRecordFactory(envelope));
      proxy.down();
      proxy.resetCount();

      // Act
      const result = await engine.processBatch(records, ample);
      const connections = proxy.connections;
      await close();

      // Assess: one connection attempt for the whole batch; every record reported with a backoff.
      expect(result.databaseDown).toBe(true);
      expect(connections).toBe(1);
      expect(result.outcomes.map((outcome) => outcome.messageId)).toEqual(
        records.map((record) => record.messageId),
      );
      for (const outcome of result.outcomes) {
        expect(outcome).toMatchObject({ result: 'RETRYABLE_FAILURE', acknowledged: false });
        expect(outcome.visibilitySeconds).toBeGreaterThan(0);
      }
      expect(result.outcomes.slice(1).map((outcome) => outcome.failureCode)).toEqual(
        commitMode === 'per-batch'
          ? ['BATCH_COMMIT_FAILED', 'BATCH_COMMIT_FAILED']
          : ['DATABASE_UNAVAILABLE', 'DATABASE_UNAVAILABLE'],
      );
      expect(seen).toHaveLength(3);
      expect(await ledgerCount(envelopes)).toBe(0);
    });

    it('starts no record once the budget is below the deadline guard, and leaves the unstarted ones untouched', async () => {
      // Prepare: a handler that uses up the budget (the clock of the runtime jumps to 100 ms left while it runs).
      let leftMs = 30_000;
      const budget: BatchBudget = { remainingMs: () => leftMs };
      const consumesBudget = defineHandler({
        messageType: 'ConsumesBudget',
        schemaVersion: 1,
        payload: z.object({ id: z.string() }),
        async handle({ sql, payload }) {
          await sql`
          insert into ledger_entries (entry_id, account_id, amount, currency, source_event_id)
          values (${payload.id}, 'ACC-BUDGET', 1, 'EUR', ${payload.id})
        `;
          leftMs = 100;
          return {};
        },
      });
      const id = `BUDGET-${randomUUID()}`;
      const first = envelopeFactory({ messageType: 'ConsumesBudget', idempotencyKey: id, payload: { id } });
      const rest = [payment(), payment()];
      const records = [first, ...rest].map((envelope) => sqsRecordFactory(envelope));
      const { engine, seen } = engineWith(db.sql, {
        commitMode,
        handlers: [...exampleHandlers, consumesBudget],
        deadlineGuardMs: 500,
      });

      // Act
      const { outcomes } = await engine.processBatch(records, budget);

      // Assess
      expect(outcomes.map((outcome) => outcome.result)).toEqual([
        'COMPLETED',
        'DEADLINE_DEFERRED',
        'DEADLINE_DEFERRED',
      ]);
      expect(outcomes[1]).toMatchObject({ acknowledged: false, visibilitySeconds: 0 });
      expect(seen).toEqual(outcomes);
      expect(await inboxRow(id)).toMatchObject({ status: 'COMPLETED' });
      for (const envelope of rest) expect(await inboxRow(envelope.idempotencyKey)).toBeUndefined();
      expect(await ledgerCount(rest)).toBe(0);
    });
  },
);
