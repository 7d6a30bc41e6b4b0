import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ATTEMPT_HISTORY_LIMIT } from '../../lambda/attempt-history.ts';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { RetryableError, TerminalError } from '../../lambda/errors.ts';
import { defineHandler } from '../../lambda/stores/postgres/message-handler.ts';
import type { CommitMode } from '../../lambda/types.ts';
import { NEVER_ATTEMPTED, NO_INBOX_ENTRY, NO_KEY } from '../../tools/ops/classify-failures.ts';
import { dlqPeek } from '../../tools/ops/dlq-peek.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { inboxShow } from '../../tools/ops/stores/postgres/inbox-show.ts';
import { postgresOpsStore } from '../../tools/ops/stores/postgres/index.ts';
import { quarantineList } from '../../tools/ops/stores/postgres/quarantine-list.ts';
import { createQueues, sendAll, startOpsSqs } from '../ops/ops-fixture.ts';
import { createTestDatabase } from '../support/database.ts';
import { envelopeFactory, lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';
import { alwaysRetryable } from '../support/test-handlers.ts';
import { exampleWorker } from '../support/test-worker.ts';

const db = await createTestDatabase();
const { sqs } = await startOpsSqs();

/** Keys whose `Flaky` handler fails (retryable) until the test takes them out. */
const failingKeys = new Set<string>();
const flaky = defineHandler({
  messageType: 'Flaky',
  schemaVersion: 1,
  payload: z.object({ key: z.string() }),
  async handle({ payload }) {
    if (failingKeys.has(payload.key))
      throw new RetryableError('DOWNSTREAM_UNAVAILABLE', 'the downstream answered 503');
    return { resultRef: `flaky/${payload.key}` };
  },
});
/** `FailsWith`: terminal with the code its payload names. */
const failsWith = defineHandler({
  messageType: 'FailsWith',
  schemaVersion: 1,
  payload: z.object({ code: z.string() }),
  async handle({ payload }) {
    throw new TerminalError(payload.code, 'the case cannot take this change');
  },
});
const handlers = [...exampleHandlers, flaky, failsWith, alwaysRetryable];

const worker = (
  workerVersion: string,
  options: { consumer?: string; commitMode?: CommitMode; failInvocationOnFullBatchFailure?: boolean } = {},
) => exampleWorker(db.sql, { handlers, workerVersion, ...options });
const payment = () => {
  const id = `PAY-${randomUUID()}`;
  return envelopeFactory({
    idempotencyKey: `payment:${id}`,
    aggregateId: id,
    payload: { paymentId: id, accountId: 'ACC-1', amount: '1.00', currency: 'EUR' },
  });
};
const inboxRow = async (key: string, consumer = 'case-worker') =>
  (
    await db.sql`
      select status, receive_count, first_version, attempt_history from worker_inbox
      where consumer = ${consumer} and idempotency_key = ${key}
    `
  )[0];
/** The history without its times (asserted apart: each an ISO time, in order). */
const withoutTimes = (history: Array<Record<string, unknown>>) => history.map(({ at: _at, ...rest }) => rest);

describe.each(['per-message', 'per-batch'] as const)('Attempt history, commitMode %s', (commitMode) => {
  it('keeps the version that first saw a key and one entry per attempt, the completion included', async () => {
    // Prepare: a key whose downstream fails twice, under two deploys, then recovers under a third; each batch also
    // carries a new payment (per batch, the batch claim is made for two keys or more)
    const key = `flaky:${randomUUID()}`;
    failingKeys.add(key);
    const record = sqsRecordFactory(
      envelopeFactory({ messageType: 'Flaky', idempotencyKey: key, payload: { key } }),
    );
    const deliver = (version: string, receiveCount: number) =>
      worker(version, { commitMode })(
        sqsEvent([
          sqsRecordFactory(record.body, { messageId: `${version}-${record.messageId}`, receiveCount }),
          sqsRecordFactory(payment()),
        ]),
        lambdaContext(),
      );

    // Act
    await deliver('deploy-1', 1);
    await deliver('deploy-2', 2);
    failingKeys.delete(key);
    const last = await deliver('deploy-3', 3);

    // Assess
    expect(last.batchItemFailures).toEqual([]);
    const row = await inboxRow(key);
    expect(row?.status).toBe('COMPLETED');
    expect(row?.first_version).toBe('deploy-1');
    expect(withoutTimes(row?.attempt_history)).toEqual([
      {
        outcome: 'FAILED_RETRYABLE',
        code: 'DOWNSTREAM_UNAVAILABLE',
        version: 'deploy-1',
        messageId: `deploy-1-${record.messageId}`,
        attempt: 1,
        receiveCount: 1,
      },
      {
        outcome: 'FAILED_RETRYABLE',
        code: 'DOWNSTREAM_UNAVAILABLE',
        version: 'deploy-2',
        messageId: `deploy-2-${record.messageId}`,
        attempt: 2,
        receiveCount: 2,
      },
      {
        outcome: 'COMPLETED',
        version: 'deploy-3',
        messageId: `deploy-3-${record.messageId}`,
        attempt: 3,
        receiveCount: 3,
      },
    ]);
    const times = row?.attempt_history.map((a: { at: string }) => Date.parse(a.at));
    expect(times.every(Number.isFinite)).toBe(true);
    expect([...times].sort()).toEqual(times);
  });

  it('records a new key completed at once with one COMPLETED attempt', async () => {
    // Prepare
    const envelopes = [payment(), payment()];
    const records = envelopes.map((e) => sqsRecordFactory(e));

    // Act
    const response = await worker('deploy-7', { commitMode })(sqsEvent(records), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    for (const [index, envelope] of envelopes.entries()) {
      const row = await inboxRow(envelope.idempotencyKey);
      expect(row?.first_version).toBe('deploy-7');
      expect(withoutTimes(row?.attempt_history)).toEqual([
        {
          outcome: 'COMPLETED',
          version: 'deploy-7',
          messageId: records[index]?.messageId,
          attempt: 1,
          receiveCount: 1,
        },
      ]);
    }
  });
});

describe('Attempt history bound', () => {
  it(`keeps the last ${ATTEMPT_HISTORY_LIMIT} attempts of a key that failed 25 times, and inbox show renders them`, async () => {
    // Prepare
    const key = `always:${randomUUID()}`;
    const envelope = envelopeFactory({
      messageType: 'AlwaysRetryable',
      idempotencyKey: key,
      attemptPolicy: { maxBusinessAttempts: 100 },
      payload: {},
    });
    const version = (n: number) => `deploy-${String(n).padStart(2, '0')}`;

    // Act: 25 deliveries, each by another deploy
    for (let n = 1; n <= 25; n += 1) {
      await worker(version(n), { failInvocationOnFullBatchFailure: false })(
        sqsEvent([sqsRecordFactory(envelope, { receiveCount: n })]),
        lambdaContext(),
      );
    }
    const out = createMemoryOutput();
    const shown = await inboxShow({ sql: db.sql, out }, { consumer: 'case-worker', idempotencyKey: key });

    // Assess
    const row = await inboxRow(key);
    expect(row?.receive_count).toBe(25);
    expect(row?.first_version).toBe(version(1));
    expect(row?.attempt_history).toHaveLength(ATTEMPT_HISTORY_LIMIT);
    expect(row?.attempt_history.map((a: { attempt: number }) => a.attempt)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 6),
    );
    expect(row?.attempt_history.map((a: { version: string }) => a.version)).toEqual(
      Array.from({ length: 20 }, (_, i) => version(i + 6)),
    );
    expect(shown.inbox?.firstVersion).toBe(version(1));
    expect(shown.inbox?.attemptHistory).toHaveLength(ATTEMPT_HISTORY_LIMIT);
    const text = out.stdout();
    expect(text).toContain(`Attempts (the last ${ATTEMPT_HISTORY_LIMIT} are kept; oldest first):`);
    expect(text).toContain(version(25));
    expect(text).toContain(version(6));
    expect(
      text.split('\n').filter((line) => line.includes('DOWNSTREAM_UNAVAILABLE') && line.includes('deploy-')),
    ).toHaveLength(20);
    expect(text).not.toContain(version(5));
  });
});

describe('Classify before redrive', () => {
  it('counts DLQ messages and quarantine entries by failure code and the version that first saw each key', async () => {
    // Prepare: two keys quarantined by deploy-1 and two by deploy-2 (two codes), one message never attempted, one
    // body that is no envelope; the DLQ holds them all.
    const consumer = `classify-${randomUUID().slice(0, 8)}`;
    const terminal = (code: string) =>
      envelopeFactory({
        messageType: 'FailsWith',
        idempotencyKey: `fails:${randomUUID()}`,
        payload: { code },
      });
    const v1 = [terminal('CASE_NOT_FOUND'), terminal('CASE_NOT_FOUND')];
    const v2 = [terminal('CASE_NOT_FOUND'), terminal('STAGE_REGRESSION')];
    const unseen = payment();
    const garbage = 'not json {';
    await worker('deploy-1', { consumer })(sqsEvent(v1.map((e) => sqsRecordFactory(e))), lambdaContext());
    await worker('deploy-2', { consumer })(
      sqsEvent([...v2.map((e) => sqsRecordFactory(e)), sqsRecordFactory(garbage)]),
      lambdaContext(),
    );
    const { dlqUrl } = await createQueues(sqs);
    await sendAll(sqs, dlqUrl, [...v1, ...v2, unseen, garbage]);
    const store = postgresOpsStore({ sql: () => db.sql });
    const peekOut = createMemoryOutput();
    const listOut = createMemoryOutput();

    // Act
    const peeked = await dlqPeek(
      { store, sqs, out: peekOut },
      { dlqUrl, consumer, max: 10, waitSeconds: 0, group: true },
    );
    const listed = await quarantineList({ sql: db.sql, out: listOut }, { consumer, limit: 1, group: true });

    // Assess
    expect(peeked.classes).toEqual([
      {
        code: 'CASE_NOT_FOUND',
        firstVersion: 'deploy-1',
        count: 2,
        sampleKeys: expect.arrayContaining(v1.map((e) => e.idempotencyKey)),
      },
      { code: 'CASE_NOT_FOUND', firstVersion: 'deploy-2', count: 1, sampleKeys: [v2[0]?.idempotencyKey] },
      { code: 'INVALID_ENVELOPE', firstVersion: NO_KEY, count: 1, sampleKeys: [] },
      { code: 'NO_INBOX_ROW', firstVersion: NEVER_ATTEMPTED, count: 1, sampleKeys: [unseen.idempotencyKey] },
      { code: 'STAGE_REGRESSION', firstVersion: 'deploy-2', count: 1, sampleKeys: [v2[1]?.idempotencyKey] },
    ]);
    expect(peekOut.stdout()).toContain('By failure code and first-seen version:');
    expect(peekOut.stdout()).toContain(NEVER_ATTEMPTED);
    expect(peekOut.stdout()).not.toContain('sqs message id'); // --group prints the classes, not every message
    expect(listed.entries).toHaveLength(1); // the limit lists one; the classes count every matching entry
    expect(listed.classes).toEqual([
      {
        code: 'CASE_NOT_FOUND',
        firstVersion: 'deploy-1',
        count: 2,
        sampleKeys: expect.arrayContaining(v1.map((e) => e.idempotencyKey)),
      },
      { code: 'CASE_NOT_FOUND', firstVersion: 'deploy-2', count: 1, sampleKeys: [v2[0]?.idempotencyKey] },
      { code: 'INVALID_JSON', firstVersion: NO_KEY, count: 1, sampleKeys: [] },
      { code: 'STAGE_REGRESSION', firstVersion: 'deploy-2', count: 1, sampleKeys: [v2[1]?.idempotencyKey] },
    ]);
    expect(listed.entries[0]).toMatchObject({ workerVersion: 'deploy-2' });
    const quarantined = await db.sql`
      select idempotency_key, worker_version from worker_quarantine where consumer = ${consumer} and idempotency_key is not null
    `;
    expect(Object.fromEntries(quarantined.map((q) => [q.idempotency_key, q.worker_version]))).toEqual({
      [v1[0]?.idempotencyKey as string]: 'deploy-1',
      [v1[1]?.idempotencyKey as string]: 'deploy-1',
      [v2[0]?.idempotencyKey as string]: 'deploy-2',
      [v2[1]?.idempotencyKey as string]: 'deploy-2',
    });
    expect(listOut.stdout()).toContain('By reason code and first-seen version (every matching entry):');
    // A quarantined key whose inbox row is gone (purged) is a class of its own
    await db.sql`delete from worker_inbox where consumer = ${consumer} and idempotency_key = ${v2[1]?.idempotencyKey as string}`;
    const after = await quarantineList({ sql: db.sql, out: createMemoryOutput() }, { consumer, group: true });
    expect(after.classes).toContainEqual({
      code: 'STAGE_REGRESSION',
      firstVersion: NO_INBOX_ENTRY,
      count: 1,
      sampleKeys: [v2[1]?.idempotencyKey],
    });
  });
});
