import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { effectKey } from '../../lambda/effects/effect-key.ts';
import { httpNotificationProvider } from '../../lambda/effects/http-notification-provider.ts';
import type { NotificationProvider } from '../../lambda/effects/notification-provider.ts';
import type { HealthFigures } from '../../lambda/health/collect-health.ts';
import type { WorkerHandler, WorkerOptions } from '../../lambda/runtimes/lambda/create-worker.ts';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import type { RecordOutcome } from '../../lambda/worker/outcome.ts';
import type { DlqInbox } from '../../tools/ops/ops-store.ts';
import { escalationEnvelope } from './escalation-envelope.ts';
import {
  type FakeNotificationProvider,
  startFakeNotificationProvider,
} from './fake-notification-provider.ts';
import { jsonWithNestedArrays, NESTED } from './nested-json.ts';
import { envelopeFactory, lambdaContext, sqsEvent, sqsRecordFactory } from './sqs-event.ts';

// The conformance suite of the Store contract (lambda/worker/store.ts, lambda/worker/record-store.ts): the engine's
// acceptance cases that hold for any store, each run through the same worker (createWorker → createBatchEngine) on the
// same example domain in the store's own handlers, the state read back from the store. A store passes it with one
// call of describeStoreConformance and a StoreFixture (test/integration/store-acceptance.test.ts has one per store
// and commit mode); a third store under lambda/stores/ adds its own there.

/** What a test needs of a store: a worker on it (a new client each), and its state read back. */
export interface StoreFixture {
  /**
   * A worker on the store with the example domain's handlers, and with `effects.provider` the escalation example
   * (`CaseEscalationRequested`) too, calling that provider through the store's external-effect log.
   */
  worker(overrides?: Partial<WorkerOptions>, effects?: { provider?: NotificationProvider }): WorkerHandler;
  inboxStatus(key: string): Promise<string | undefined>;
  /** The external-effect log entry of an effect key: its status, attempts and provider reference; undefined when absent. */
  effectLogEntry(
    effectKey: string,
  ): Promise<{ status: string; attempts: number; reference: string | undefined } | undefined>;
  /** The escalation notifications the example domain recorded for a case (one per message): effect key and reference. */
  notifications(caseId: string): Promise<{ effectKey: string; reference: string }[]>;
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
  /**
   * How often a record's handler runs in a delivery that fails: 2 in PostgreSQL's per-batch mode, whose first failing
   * batch of a worker runs again with a savepoint per record in the same invocation (docs/semantics.md). @default 1
   */
  readonly runsPerFailedDelivery?: number;
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

    describe('the external-effect log, through the escalation example', () => {
      // A notification service that honours idempotency keys (HTTP on loopback), called through the HTTP provider
      // the deployed worker uses. While `answersLost`, each request reaches it and is applied, but its answer is lost
      // on the way back (a plain error: an unknown outcome to the effect log).
      const starting = startFakeNotificationProvider();
      let fake: FakeNotificationProvider;
      let answersLost = false;
      let provider: NotificationProvider;
      beforeAll(async () => {
        fake = await starting;
        const http = httpNotificationProvider({ url: fake.url, name: 'fake-notifications' });
        provider = {
          name: http.name,
          async send(notification, idempotencyKey) {
            const answer = await http.send(notification, idempotencyKey);
            if (answersLost)
              throw new Error('socket hang up (injected: the answer was lost after the request)');
            return answer;
          },
        };
      });
      /** A worker with the escalation handler, its outcomes kept, and a case of its own created through it. */
      const escalationWorker = async (overrides: Partial<WorkerOptions> = {}) => {
        const outcomes: RecordOutcome[] = [];
        const worker = store.worker(
          { onOutcome: (outcome) => outcomes.push(outcome), ...overrides },
          { provider },
        );
        const caseId = `CASE-${randomUUID()}`;
        await worker(sqsEvent([sqsRecordFactory(stageChanged(caseId, 1))]), lambdaContext());
        const envelope = escalationEnvelope(caseId);
        const key = effectKey('case-worker', 'escalation-notification', envelope.idempotencyKey);
        /** The outcomes of the escalation's deliveries: result and failure code of each. */
        const deliveries = () =>
          outcomes
            .filter((outcome) => outcome.idempotencyKey === envelope.idempotencyKey)
            .map(({ result, failureCode }) => ({ result, failureCode }));
        /** The idempotency keys of the provider's requests since now. */
        const keysBefore = fake.keys.length;
        const sentKeys = () => fake.keys.slice(keysBefore);
        return { worker, caseId, envelope, key, deliveries, sentKeys, appliedBefore: fake.applied };
      };

      it('notifies once when the escalation arrives three times: the same SQS message again (its response lost after commit) and a new one', async () => {
        // Prepare
        const { worker, caseId, envelope, key, deliveries, sentKeys, appliedBefore } =
          await escalationWorker();
        const first = sqsRecordFactory(envelope);

        // Act
        const responses = [
          await worker(sqsEvent([first]), lambdaContext()),
          await worker(sqsEvent([again(first, 2)]), lambdaContext()),
          await worker(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext()),
        ];

        // Assess: the provider was called once; the copies were duplicates of the inbox, never reaching the handler.
        expect(responses).toEqual([
          { batchItemFailures: [] },
          { batchItemFailures: [] },
          { batchItemFailures: [] },
        ]);
        expect(deliveries()).toEqual([
          { result: 'COMPLETED', failureCode: undefined },
          { result: 'DUPLICATE', failureCode: undefined },
          { result: 'DUPLICATE', failureCode: undefined },
        ]);
        expect(sentKeys()).toEqual([key]);
        expect(fake.applied - appliedBefore).toBe(1);
        const entry = await store.effectLogEntry(key);
        expect(entry).toMatchObject({ status: 'COMPLETED', attempts: 1 });
        expect(await store.notifications(caseId)).toEqual([{ effectKey: key, reference: entry?.reference }]);
        expect(await store.inboxStatus(envelope.idempotencyKey)).toBe('COMPLETED');
      });

      it('retries an unknown outcome with the same idempotency key, and completes with one effect', async () => {
        // Prepare: the provider applies the first delivery's requests but their answers are lost (EFFECT_OUTCOME_UNKNOWN).
        const { worker, caseId, envelope, key, deliveries, sentKeys, appliedBefore } = await escalationWorker(
          {
            failInvocationOnFullBatchFailure: false,
          },
        );
        const record = sqsRecordFactory(envelope);

        // Act
        answersLost = true;
        const first = await worker(sqsEvent([record]), lambdaContext()).finally(() => {
          answersLost = false;
        });
        const afterFirst = {
          inbox: await store.inboxStatus(envelope.idempotencyKey),
          log: (await store.effectLogEntry(key))?.status,
          sent: sentKeys().length,
        };
        const redelivery = await worker(sqsEvent([again(record, 2)]), lambdaContext());

        // Assess: reported for a retry with the effect PENDING; the retry sent the same key again and completed.
        const runs = store.runsPerFailedDelivery ?? 1;
        expect(first).toEqual({ batchItemFailures: [{ itemIdentifier: record.messageId }] });
        expect(afterFirst).toEqual({ inbox: 'FAILED_RETRYABLE', log: 'PENDING', sent: runs });
        expect(redelivery).toEqual({ batchItemFailures: [] });
        expect(deliveries()).toEqual([
          { result: 'RETRYABLE_FAILURE', failureCode: 'EFFECT_OUTCOME_UNKNOWN' },
          { result: 'COMPLETED', failureCode: undefined },
        ]);
        expect(sentKeys()).toEqual(Array.from({ length: runs + 1 }, () => key));
        expect(fake.applied - appliedBefore).toBe(1);
        const entry = await store.effectLogEntry(key);
        expect(entry).toMatchObject({ status: 'COMPLETED', attempts: runs + 1 });
        expect(await store.notifications(caseId)).toEqual([{ effectKey: key, reference: entry?.reference }]);
        expect(await store.inboxStatus(envelope.idempotencyKey)).toBe('COMPLETED');
      });

      it('quarantines an escalation the provider rejects for good (EFFECT_REJECTED), and never calls it again', async () => {
        // Prepare
        const { worker, caseId, envelope, key, deliveries, sentKeys, appliedBefore } =
          await escalationWorker();
        const record = sqsRecordFactory(envelope);
        fake.failNext(422);

        // Act
        const responses = [
          await worker(sqsEvent([record]), lambdaContext()),
          await worker(sqsEvent([again(record, 2)]), lambdaContext()),
        ];

        // Assess: acknowledged with its quarantine record; the redelivery stayed terminal without a call. A delivery
        // whose handler ran twice (per-batch's redo) met the rejection already logged: EFFECT_FAILED_TERMINAL.
        const code = (store.runsPerFailedDelivery ?? 1) > 1 ? 'EFFECT_FAILED_TERMINAL' : 'EFFECT_REJECTED';
        expect(responses).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
        expect(deliveries()).toEqual([
          { result: 'TERMINAL_FAILURE', failureCode: code },
          { result: 'TERMINAL_FAILURE', failureCode: code },
        ]);
        expect(sentKeys()).toEqual([key]);
        expect(fake.applied).toBe(appliedBefore);
        expect(await store.effectLogEntry(key)).toMatchObject({ status: 'FAILED_TERMINAL', attempts: 1 });
        expect(await store.inboxStatus(envelope.idempotencyKey)).toBe('FAILED_TERMINAL');
        expect(await store.quarantineReasons({ idempotencyKey: envelope.idempotencyKey })).toEqual([code]);
        expect(await store.notifications(caseId)).toEqual([]);
      });

      it('keeps a rejected escalation rejected when a redrive re-arms its key: EFFECT_FAILED_TERMINAL, no call', async () => {
        // Prepare: rejected and quarantined, then re-armed around a redrive's send, as `dlq redrive` does.
        const { worker, caseId, envelope, key, deliveries, sentKeys } = await escalationWorker();
        const record = sqsRecordFactory(envelope);
        fake.failNext(422);
        await worker(sqsEvent([record]), lambdaContext());
        const rearmed = await store
          .dlqInbox()
          .rearmAround({ consumer: 'case-worker', idempotencyKey: envelope.idempotencyKey }, async () => {});

        // Act
        const redriven = await worker(sqsEvent([sqsRecordFactory(envelope)]), lambdaContext());

        // Assess: the handler ran again and the effect log refused the call; quarantined again, acknowledged.
        expect(rearmed).toBe(true);
        expect(redriven).toEqual({ batchItemFailures: [] });
        expect(deliveries().at(-1)).toEqual({
          result: 'TERMINAL_FAILURE',
          failureCode: 'EFFECT_FAILED_TERMINAL',
        });
        expect(sentKeys()).toEqual([key]);
        expect(await store.effectLogEntry(key)).toMatchObject({ status: 'FAILED_TERMINAL' });
        expect(await store.inboxStatus(envelope.idempotencyKey)).toBe('FAILED_TERMINAL');
        expect(await store.notifications(caseId)).toEqual([]);
      });
    });
  });
}
