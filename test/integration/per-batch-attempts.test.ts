import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { claimInbox } from '../../lambda/stores/postgres/inbox.ts';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import { requestHash } from '../../lambda/worker/request-hash.ts';
import { holdCaseLock } from '../../tools/local/hold-case-lock.ts';
import { createTestDatabase } from '../support/database.ts';
import { envelopeFactory, lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';
import { exampleWorker } from '../support/test-worker.ts';

const db = await createTestDatabase();

const payment = () => envelopeFactory();
const missingCaseDeadline = () =>
  envelopeFactory({
    messageType: 'CaseDeadlineCalculationRequested',
    idempotencyKey: `deadline:${randomUUID()}`,
    aggregateType: 'case',
    aggregateId: 'CASE-missing',
    payload: {
      caseId: `CASE-missing-${randomUUID()}`,
      stage: 'INVESTIGATION',
      effectiveAt: '2026-07-06T10:15:00Z',
    },
    // A missing case is retryable by default; this producer makes it terminal at once.
    attemptPolicy: { terminalAfterCodes: ['CASE_NOT_FOUND'] },
  });
const paymentId = (envelope: Envelope) => (envelope.payload as { paymentId: string }).paymentId;
const ledgerCount = async (envelope: Envelope) =>
  Number(
    (await db.sql`select count(*) from ledger_entries where source_event_id = ${paymentId(envelope)}`)[0]
      ?.count,
  );

describe('Function: createWorker() handler, commitMode per-batch: savepoints only when needed', () => {
  // Statements of the worker's client, whitespace collapsed, per invocation.
  let statements: string[] = [];
  const sql = db.client({
    max: 1,
    prepare: false,
    debug: (_connection, query) => statements.push(query.replace(/\s+/g, ' ').trim()),
  });
  const worker = exampleWorker(sql, { commitMode: 'per-batch', terminalPolicy: 'dlq' });
  const invoke = async (envelopes: Envelope[]) => {
    statements = [];
    const records = envelopes.map((envelope) => sqsRecordFactory(envelope));
    const response = await worker(sqsEvent(records), lambdaContext());
    const savepoints = statements.filter((statement) => statement.startsWith('savepoint ')).length;
    const rollbacks = statements.filter((statement) => statement === 'rollback').length;
    return { records, response, savepoints, rollbacks, statements };
  };

  it('runs clean batches without a savepoint per record; a failure reruns its batch with them, once', async () => {
    // Act: a clean batch; a batch whose third record fails terminally; two clean batches.
    const clean = [payment(), payment(), payment()];
    const first = await invoke(clean);
    const mixed = [payment(), payment(), missingCaseDeadline(), payment(), payment()];
    const second = await invoke(mixed);
    const third = await invoke([payment(), payment(), payment()]);
    const fourth = await invoke([payment(), payment(), payment()]);

    // Assess: no savepoint while no record needs one; the failing batch was rolled back once and run again
    // with savepoints (its batch claim, each record, the failure's bookkeeping); the next batch keeps them, the
    // one after drops them.
    expect(first).toMatchObject({ response: { batchItemFailures: [] }, savepoints: 0, rollbacks: 0 });
    expect(second).toMatchObject({
      response: { batchItemFailures: [{ itemIdentifier: second.records[2]?.messageId }] },
      savepoints: 1 + 5 + 1,
      rollbacks: 1,
    });
    expect(third).toMatchObject({ response: { batchItemFailures: [] }, savepoints: 1 + 3, rollbacks: 0 });
    expect(fourth).toMatchObject({ response: { batchItemFailures: [] }, savepoints: 0, rollbacks: 0 });
    // The batch claims worked (one statement for the batch, not one per record).
    const claims = (batch: { statements: string[] }) =>
      batch.statements.filter((statement) => /insert into worker_inbox \(/.test(statement)).length;
    expect([first, second, third, fourth].map(claims)).toEqual([1, 2, 1, 1]);

    // Every effect exactly once; the failed key counted one attempt, not two, and wrote nothing else.
    for (const envelope of [...clean, ...mixed.filter((_, index) => index !== 2)]) {
      expect(await ledgerCount(envelope)).toBe(1);
    }
    const keys = [...clean, ...mixed].map((envelope) => envelope.idempotencyKey);
    const rows = await db.sql<{ idempotency_key: string; status: string; receive_count: number }[]>`
      select idempotency_key, status, receive_count from worker_inbox
      where consumer = 'case-worker' and idempotency_key = any(${keys}::text[])`;
    expect(rows).toHaveLength(8);
    expect(rows.filter((row) => row.status === 'COMPLETED' && row.receive_count === 1)).toHaveLength(7);
    expect(rows.find((row) => row.idempotency_key === mixed[2]?.idempotencyKey)).toMatchObject({
      status: 'FAILED_TERMINAL',
      receive_count: 1,
    });
  });

  it('reruns the batch claiming record by record when the batch claim meets a key in flight elsewhere', async () => {
    // Prepare: A completed earlier; a second delivery of A is in flight in another transaction (the engine's own
    // claim, not ended). A's key sorts after the others'.
    const a = envelopeFactory({ idempotencyKey: `zz-held:${randomUUID()}` });
    await worker(sqsEvent([sqsRecordFactory(a)]), lambdaContext());
    const [b, c] = [payment(), payment()];
    const holder = db.client({ max: 1 });
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const locked = new Promise<void>((resolve) => {
      void holder.begin(async (tx) => {
        await claimInbox(tx, {
          consumer: 'case-worker',
          envelope: a as never,
          requestHash: requestHash(a as never),
          sqsMessageId: 'in-flight-copy',
        });
        resolve();
        await held;
      });
    });
    await locked;

    // Act
    statements = [];
    const records = [a, b, c].map((envelope) => sqsRecordFactory(envelope));
    const started = Date.now();
    const response = await worker(sqsEvent(records), lambdaContext());
    const waitedMs = Date.now() - started;
    release();

    // Assess: A reported (in flight elsewhere) without waiting for any lock (the role's lock timeout is 5 s); B
    // and C applied once; one batch claim (which claimed nothing), then one claim per record.
    expect(waitedMs).toBeLessThan(4000);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: records[0]?.messageId }]);
    expect([await ledgerCount(b), await ledgerCount(c)]).toEqual([1, 1]);
    const claims = statements.filter((statement) => /insert into worker_inbox \(/.test(statement)).length;
    expect(claims).toBe(1 + 3);
  });

  it('waits for a domain row under the role lock timeout after a failure settled in the batch transaction', async () => {
    // Prepare: a poison record settles first (its bookkeeping sets nothing); the deadline record after it was
    // claimed with the batch and waits up to the role's lock_timeout (3 s for this client) for its case row,
    // which another transaction holds for 800 ms.
    const lockWorker = exampleWorker(db.client({ max: 1, connection: { lock_timeout: 3000 } }), {
      commitMode: 'per-batch',
    });
    const caseId = `CASE-${randomUUID()}`;
    await db.sql`insert into cases (case_id, stage, version) values (${caseId}, 'INVESTIGATION', 1)`;
    const deadline = envelopeFactory({
      messageType: 'CaseDeadlineCalculationRequested',
      idempotencyKey: `deadline:${caseId}`,
      aggregateType: 'case',
      aggregateId: caseId,
      payload: { caseId, stage: 'INVESTIGATION', effectiveAt: '2026-07-06T10:15:00Z' },
    });
    const records = [
      sqsRecordFactory('not json at all'),
      sqsRecordFactory(payment()),
      sqsRecordFactory(deadline),
    ];
    const release = await holdCaseLock(db.client({ max: 1 }), caseId);
    const releasing = new Promise((resolve) => setTimeout(resolve, 800)).then(release);

    // Act
    const response = await lockWorker(sqsEvent(records), lambdaContext());
    await releasing;

    // Assess: nothing reported (the poison is quarantined); the deadline waited for the lock and applied.
    expect(response).toEqual({ batchItemFailures: [] });
    expect(await db.sql`select case_id from case_deadlines where case_id = ${caseId}`).toHaveLength(1);
  });

  it('refuses a client that cannot send arrays (fetch_types off), naming the fix', () => {
    const noArrays = db.client({ max: 1, fetch_types: false });

    expect(() => exampleWorker(noArrays, { commitMode: 'per-batch' })).toThrow(
      'commitMode per-batch claims a batch with arrays, which a postgres.js client with fetch_types: false cannot send; leave fetch_types on (the default)',
    );
    expect(() => exampleWorker(noArrays, { commitMode: 'per-message' })).not.toThrow();
  });
});
