import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { HealthFigures } from '../../lambda/health/collect-health.ts';
import type { WorkerHandler, WorkerOptions } from '../../lambda/runtimes/lambda/create-worker.ts';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import type { DlqInbox } from '../../tools/ops/ops-store.ts';
import { jsonWithNestedArrays, NESTED } from './nested-json.ts';
import { envelopeFactory, lambdaContext, sqsEvent, sqsRecordFactory } from './sqs-event.ts';

// The conformance suite of the Store contract (lambda/worker/store.ts, lambda/worker/record-store.ts): the engine's
// acceptance cases that hold for any store, each run through the same worker (createWorker → createBatchEngine) on the
// same example domain in the store's own handlers, the state read back from the store. A store passes it with one
// call of describeStoreConformance and a StoreFixture (test/integration/store-acceptance.test.ts has one per store
// and commit mode); a third store under lambda/stores/ adds its own there.

/** What a test needs of a store: a worker on it (a new client each), and its state read back. */
export interface StoreFixture {
  worker(overrides?: Partial<WorkerOptions>): WorkerHandler;
  inboxStatus(key: string): Promise<string | undefined>;
  /** Ledger entries of a payment (0 or 1) and how often its account's balance was added to. */
  payment(paymentId: string, accountId: string): Promise<{ ledger: number; additions: number }>;
  caseState(caseId: string): Promise<{ stage?: string; version?: number; deadlineVersion?: number }>;
  quarantineReasons(match: { idempotencyKey?: string; body?: string }): Promise<string[]>;
  /**
   * A producer transaction: creates the case `caseId` (stage OPEN, version 1) and writes `envelope` to the outbox,
   * committed, or rolled back after both writes (`fail`); `conflict` when the outbox refused the event (its key names
   * another event) and nothing of the transaction was applied.
   */
  produce(
    caseId: string,
    envelope: Envelope,
    options?: { fail?: boolean },
  ): Promise<'committed' | 'rolled back' | 'conflict'>;
  /** The outbox record of an idempotency key: its status and the envelope it will send; undefined when absent. */
  outboxEvent(idempotencyKey: string): Promise<{ status: string; envelope: Envelope } | undefined>;
  /** The health job's figures of `consumer`, read now (the store's own health check). */
  health(consumer: string): Promise<HealthFigures>;
  /** What `dlq peek` and `dlq redrive` read and re-arm on this store (the operator's client). */
  dlqInbox(): DlqInbox;
}

const payment = () => {
  const paymentId = `PAY-${randomUUID()}`;
  const accountId = `ACC-${randomUUID()}`;
  return {
    paymentId,
    accountId,
    envelope: envelopeFactory({
      idempotencyKey: `payment:${paymentId}:captured`,
      aggregateId: paymentId,
      payload: { paymentId, accountId, amount: '10.50', currency: 'EUR' },
    }),
  };
};
/** A CaseStageChanged envelope of `caseId` at `version`. */
export const stageChanged = (caseId: string, version: number, stage = 'INVESTIGATION') =>
  envelopeFactory({
    messageType: 'CaseStageChanged',
    idempotencyKey: `case:${caseId}:stage:v${version}`,
    aggregateType: 'case',
    aggregateId: caseId,
    payload: { caseId, stage, version },
  });
const deadlineRequested = (caseId: string, key: string, attemptPolicy?: Record<string, unknown>) =>
  envelopeFactory({
    messageType: 'CaseDeadlineCalculationRequested',
    idempotencyKey: key,
    aggregateType: 'case',
    aggregateId: caseId,
    payload: { caseId, stage: 'INVESTIGATION', effectiveAt: '2026-07-06T10:15:00Z' },
    ...(attemptPolicy ? { attemptPolicy } : {}),
  });
/** An event a producer writes with a case it creates: a deadline request for that case. */
const requestedDeadline = (caseId: string, key = `case:${caseId}:deadline:OPEN`) =>
  envelopeFactory({
    messageType: 'CaseDeadlineCalculationRequested',
    idempotencyKey: key,
    aggregateType: 'case',
    aggregateId: caseId,
    payload: { caseId, stage: 'OPEN', effectiveAt: '2026-07-06T10:15:00Z' },
  });
const again = (record: ReturnType<typeof sqsRecordFactory>, receiveCount: number) => ({
  ...record,
  receiptHandle: `rh-${randomUUID()}`,
  attributes: { ...record.attributes, ApproximateReceiveCount: String(receiveCount) },
});

/**
 * Registers the conformance cases for the store `fixture` serves, under one describe named after it.
 */
export function describeStoreConformance(name: string, store: StoreFixture): void {
  describe(`Store conformance on ${name}`, () => {
    it('applies a message once when it arrives three times, twice as the same SQS message and once as a new one', async () => {
      // Prepare
      const worker = store.worker();
      const { envelope, paymentId, accountId } = payment();
      const first = sqsRecordFactory(envelope);

      // Act
      const responses = [
        await worker(sqsEvent([first]), lambdaContext()),
        await worker(sqsEvent([again(first, 2)]), lambdaContext()),
        await worker(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext()),
      ];

      // Assess
      expect(responses).toEqual([
        { batchItemFailures: [] },
        { batchItemFailures: [] },
        { batchItemFailures: [] },
      ]);
      expect(await store.payment(paymentId, accountId)).toEqual({ ledger: 1, additions: 1 });
      expect(await store.inboxStatus(envelope.idempotencyKey)).toBe('COMPLETED');
    });

    it('does not apply a second effect when the response is lost after commit and the message is delivered again', async () => {
      // Prepare
      const worker = store.worker();
      const caseId = `CASE-${randomUUID()}`;
      await worker(sqsEvent([sqsRecordFactory(stageChanged(caseId, 1))]), lambdaContext());
      const record = sqsRecordFactory(deadlineRequested(caseId, `case:${caseId}:deadline:v1`));

      // Act: the first response is discarded (a crash between commit and delete); SQS delivers it again.
      await worker(sqsEvent([record]), lambdaContext());
      const redelivery = await worker(sqsEvent([again(record, 2)]), lambdaContext());

      // Assess
      expect(redelivery).toEqual({ batchItemFailures: [] });
      expect((await store.caseState(caseId)).deadlineVersion).toBe(1);
    });

    it('quarantines a reused key with another payload (IDEMPOTENCY_HASH_MISMATCH), applying nothing of it', async () => {
      // Prepare
      const worker = store.worker();
      const original = payment();
      await worker(sqsEvent([sqsRecordFactory(original.envelope)]), lambdaContext());
      const other = payment();
      const conflicting = { ...other.envelope, idempotencyKey: original.envelope.idempotencyKey };

      // Act
      const mismatch = await worker(sqsEvent([sqsRecordFactory(conflicting)]), lambdaContext());

      // Assess
      expect(mismatch).toEqual({ batchItemFailures: [] });
      expect(await store.payment(other.paymentId, other.accountId)).toEqual({ ledger: 0, additions: 0 });
      expect(await store.payment(original.paymentId, original.accountId)).toEqual({
        ledger: 1,
        additions: 1,
      });
      expect(await store.inboxStatus(original.envelope.idempotencyKey)).toBe('COMPLETED');
      expect(await store.quarantineReasons({ idempotencyKey: original.envelope.idempotencyKey })).toEqual([
        'IDEMPOTENCY_HASH_MISMATCH',
      ]);
    });

    it('freezes an unfinished key that another payload reuses: FAILED_TERMINAL, and neither message runs again', async () => {
      // Prepare: message A fails retryably (its case does not exist yet); message B reuses A's key with another payload.
      const worker = store.worker();
      const caseId = `CASE-${randomUUID()}`;
      const key = `case:${caseId}:deadline:reused`;
      const a = sqsRecordFactory(deadlineRequested(caseId, key));
      const b = sqsRecordFactory({
        ...deadlineRequested(caseId, key),
        payload: { caseId, stage: 'INVESTIGATION', effectiveAt: '2026-08-01T09:00:00Z' },
      });
      // A good message beside A: a batch whose every record fails fails the invocation instead.
      const first = await worker(sqsEvent([a, sqsRecordFactory(payment().envelope)]), lambdaContext());
      const statusAfterA = await store.inboxStatus(key);

      // Act
      const mismatch = await worker(sqsEvent([b]), lambdaContext());
      await worker(sqsEvent([stageChanged(caseId, 1)].map((e) => sqsRecordFactory(e))), lambdaContext());
      const redeliveryOfA = await worker(sqsEvent([again(a, 2)]), lambdaContext());

      // Assess: a reused key is a producer bug to look at before anything runs (docs/semantics.md): B is quarantined,
      // the key is frozen with A's request, and A is not run even once its case exists.
      expect(first.batchItemFailures).toEqual([{ itemIdentifier: a.messageId }]);
      expect(statusAfterA).toBe('FAILED_RETRYABLE');
      expect(mismatch).toEqual({ batchItemFailures: [] });
      expect(redeliveryOfA).toEqual({ batchItemFailures: [] });
      expect(await store.inboxStatus(key)).toBe('FAILED_TERMINAL');
      expect((await store.caseState(caseId)).deadlineVersion ?? 0).toBe(0);
      expect((await store.quarantineReasons({ idempotencyKey: key })).sort()).toEqual([
        'IDEMPOTENCY_HASH_MISMATCH',
        'IDEMPOTENCY_HASH_MISMATCH',
      ]);
    });

    it('applies one effect per round when two workers on two clients race the same key (50 rounds)', async () => {
      // Prepare: two workers with clients of their own, as two Lambda environments would have.
      const a = store.worker();
      const b = store.worker();
      const payments = Array.from({ length: 50 }, () => payment());

      // Act
      const responses = await Promise.all(
        payments.map(({ envelope }) =>
          Promise.all([
            a(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext()),
            b(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext()),
          ]),
        ),
      );

      // Assess: exactly one effect per key; a loser met the winner in flight (retried later) or saw COMPLETED.
      for (const { paymentId, accountId } of payments) {
        expect(await store.payment(paymentId, accountId)).toEqual({ ledger: 1, additions: 1 });
      }
      for (const { envelope } of payments)
        expect(await store.inboxStatus(envelope.idempotencyKey)).toBe('COMPLETED');
      const failed = responses.flat().flatMap((response) => response.batchItemFailures);
      expect(failed.length).toBeLessThanOrEqual(50);
    });

    it('keeps a case at version 5 when version 4 arrives after it, acknowledging both', async () => {
      // Prepare
      const worker = store.worker();
      const caseId = `CASE-${randomUUID()}`;

      // Act
      const newer = await worker(
        sqsEvent([sqsRecordFactory(stageChanged(caseId, 5, 'REVIEW'))]),
        lambdaContext(),
      );
      const older = await worker(
        sqsEvent([sqsRecordFactory(stageChanged(caseId, 4, 'INVESTIGATION'))]),
        lambdaContext(),
      );

      // Assess
      expect([newer, older]).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
      expect(await store.caseState(caseId)).toMatchObject({ stage: 'REVIEW', version: 5 });
      expect(await store.inboxStatus(`case:${caseId}:stage:v4`)).toBe('COMPLETED');
    });

    it('retries a retryable failure with backoff, then quarantines it at maxBusinessAttempts', async () => {
      // Prepare: a deadline for a case that never arrives, 3 attempts allowed (a batch of it alone: not thrown).
      const worker = store.worker({ failInvocationOnFullBatchFailure: false });
      const caseId = `CASE-${randomUUID()}`;
      const key = `case:${caseId}:deadline:v1`;
      const record = sqsRecordFactory(deadlineRequested(caseId, key, { maxBusinessAttempts: 3 }));

      // Act
      const responses = [];
      for (let delivery = 1; delivery <= 3; delivery += 1) {
        responses.push(await worker(sqsEvent([again(record, delivery)]), lambdaContext()));
      }

      // Assess: reported twice, then acknowledged with its quarantine record.
      expect(responses.map((response) => response.batchItemFailures.length)).toEqual([1, 1, 0]);
      expect(await store.inboxStatus(key)).toBe('FAILED_TERMINAL');
      expect(await store.quarantineReasons({ idempotencyKey: key })).toEqual(['CASE_NOT_FOUND']);
    });

    it('quarantines a poison message (not JSON) and acknowledges it', async () => {
      // Prepare
      const worker = store.worker();
      const body = `{"not": "an envelope" ${randomUUID()}`;

      // Act
      const response = await worker(sqsEvent([sqsRecordFactory(body)]), lambdaContext());

      // Assess
      expect(response).toEqual({ batchItemFailures: [] });
      expect(await store.quarantineReasons({ body })).toEqual(['INVALID_JSON']);
    });

    it('applies the rest of the batch and quarantines a payload nested 5,000 levels deep (PAYLOAD_TOO_DEEP) with its raw body', async () => {
      // Prepare: a valid payment whose payload also carries 5,000 nested arrays (10 KB), between two good ones.
      const worker = store.worker();
      const [first, second] = [payment(), payment()];
      const deep = payment();
      const deepRecord = sqsRecordFactory(
        jsonWithNestedArrays(
          { ...deep.envelope, payload: { ...deep.envelope.payload, extra: NESTED } },
          5_000,
        ),
      );

      // Act
      const response = await worker(
        sqsEvent([sqsRecordFactory(first.envelope), deepRecord, sqsRecordFactory(second.envelope)]),
        lambdaContext(),
      );

      // Assess
      expect(response).toEqual({ batchItemFailures: [] });
      for (const good of [first, second]) {
        expect(await store.payment(good.paymentId, good.accountId)).toEqual({ ledger: 1, additions: 1 });
        expect(await store.inboxStatus(good.envelope.idempotencyKey)).toBe('COMPLETED');
      }
      expect(await store.payment(deep.paymentId, deep.accountId)).toEqual({ ledger: 0, additions: 0 });
      expect(await store.quarantineReasons({ body: deepRecord.body })).toEqual(['PAYLOAD_TOO_DEEP']);
    });

    it("writes an event with its producer's state change or not at all: committed PENDING, a rolled-back one absent", async () => {
      // Prepare
      const [kept, dropped] = [`CASE-${randomUUID()}`, `CASE-${randomUUID()}`];
      const event = requestedDeadline(kept);

      // Act
      const results = [
        await store.produce(kept, event),
        await store.produce(dropped, requestedDeadline(dropped), { fail: true }),
      ];

      // Assess
      expect(results).toEqual(['committed', 'rolled back']);
      expect(await store.caseState(kept)).toMatchObject({ stage: 'OPEN', version: 1 });
      expect(await store.outboxEvent(event.idempotencyKey)).toEqual({ status: 'PENDING', envelope: event });
      expect(await store.caseState(dropped)).toEqual({});
      expect(await store.outboxEvent(requestedDeadline(dropped).idempotencyKey)).toBeUndefined();
    });

    it('keeps one event per key: the same event again changes nothing, another event under it is refused whole', async () => {
      // Prepare
      const caseId = `CASE-${randomUUID()}`;
      const event = requestedDeadline(caseId);
      await store.produce(caseId, event);
      const retried = `CASE-${randomUUID()}`;
      const other = `CASE-${randomUUID()}`;
      const otherEvent = { ...requestedDeadline(other), idempotencyKey: event.idempotencyKey };

      // Act: the producer retries its command (a new messageId); another producer reuses the key for its event.
      const same = await store.produce(retried, { ...event, messageId: randomUUID() });
      const conflict = await store.produce(other, otherEvent);

      // Assess: the first event stands; the conflicting transaction left nothing, not even its case.
      expect([same, conflict]).toEqual(['committed', 'conflict']);
      expect(await store.outboxEvent(event.idempotencyKey)).toEqual({ status: 'PENDING', envelope: event });
      expect(await store.caseState(other)).toEqual({});
    });

    it("counts the consumer's open quarantine and its retryable failures in the health figures, and no one else's", async () => {
      // Prepare: a consumer of its own; one poison message, one deadline whose case does not exist yet.
      const consumer = `health-${randomUUID().slice(0, 8)}`;
      const worker = store.worker({ consumer, failInvocationOnFullBatchFailure: false });
      const caseId = `CASE-${randomUUID()}`;
      await worker(sqsEvent([sqsRecordFactory(`not json ${randomUUID()}`)]), lambdaContext());
      await worker(
        sqsEvent([sqsRecordFactory(deadlineRequested(caseId, `case:${caseId}:deadline:v1`))]),
        lambdaContext(),
      );

      // Act
      const figures = await store.health(consumer);
      const nobody = await store.health(`nobody-${randomUUID().slice(0, 8)}`);

      // Assess
      expect(figures.quarantine.open).toBe(1);
      expect(figures.quarantine.oldestOpenAgeMs).toBeGreaterThanOrEqual(0);
      expect(figures.inbox.byStatus).toMatchObject({
        PROCESSING: 0,
        FAILED_RETRYABLE: 1,
        FAILED_TERMINAL: 0,
      });
      expect(figures.inbox.oldestRetryableAgeMs).toBeGreaterThanOrEqual(0);
      expect(nobody.quarantine.open).toBe(0);
      expect(nobody.inbox.byStatus.FAILED_RETRYABLE).toBe(0);
    });

    it('re-arms a failed key around the redrive send, keeps it only when the send succeeds, and never a completed one', async () => {
      // Prepare: a deadline quarantined FAILED_TERMINAL after its 2 attempts (its case does not exist yet), and a
      // completed payment.
      const worker = store.worker({ failInvocationOnFullBatchFailure: false });
      const caseId = `CASE-${randomUUID()}`;
      const key = `case:${caseId}:deadline:v1`;
      const record = sqsRecordFactory(deadlineRequested(caseId, key, { maxBusinessAttempts: 2 }));
      for (const delivery of [1, 2]) await worker(sqsEvent([again(record, delivery)]), lambdaContext());
      const done = payment();
      await worker(sqsEvent([sqsRecordFactory(done.envelope)]), lambdaContext());
      const inbox = store.dlqInbox();
      const at = (idempotencyKey: string) => ({ consumer: 'case-worker', idempotencyKey });

      // Act: a send that fails (undone), then one that succeeds; a completed key; the key's redelivered copy.
      const failedSend = await inbox
        .rearmAround(at(key), async () => {
          throw new Error('injected: SendMessage failed');
        })
        .catch((error: Error) => error.message);
      const afterFailedSend = await store.inboxStatus(key);
      const rearmed = await inbox.rearmAround(at(key), async () => {});
      const completed = await inbox.rearmAround(at(done.envelope.idempotencyKey), async () => {});
      const states = await inbox.states('case-worker', [key, done.envelope.idempotencyKey]);
      await worker(sqsEvent([sqsRecordFactory(stageChanged(caseId, 1))]), lambdaContext());
      const rerun = await worker(sqsEvent([again(record, 3)]), lambdaContext());

      // Assess
      expect(failedSend).toBe('injected: SendMessage failed');
      expect(afterFailedSend).toBe('FAILED_TERMINAL');
      expect([rearmed, completed]).toEqual([true, false]);
      expect(states.get(key)).toMatchObject({ status: 'FAILED_RETRYABLE' });
      expect(states.get(done.envelope.idempotencyKey)).toMatchObject({ status: 'COMPLETED' });
      expect(rerun).toEqual({ batchItemFailures: [] });
      expect(await store.inboxStatus(key)).toBe('COMPLETED');
      expect((await store.caseState(caseId)).deadlineVersion).toBe(1);
      expect(await store.inboxStatus(done.envelope.idempotencyKey)).toBe('COMPLETED');
    });
  });
}
