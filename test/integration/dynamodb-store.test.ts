import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import {
  balanceItemKey,
  caseItemKey,
  exampleDynamoHandlers,
  ledgerItemKey,
} from '../../lambda/domain/dynamodb/index.ts';
import { RetryableError, TerminalError } from '../../lambda/errors.ts';
import { claimDynamoInbox } from '../../lambda/stores/dynamodb/claim-dynamo-inbox.ts';
import {
  type ConditionFailedRule,
  defineDynamoHandler,
} from '../../lambda/stores/dynamodb/dynamo-handler.ts';
import { dynamoOutboxWrite } from '../../lambda/stores/dynamodb/dynamo-outbox-write.ts';
import { inboxKey, outboxKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import { requestHash } from '../../lambda/worker/request-hash.ts';
import { dynamoProcessor } from '../support/dynamo-processor.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { caseStageEnvelope, envelopeFactory, sqsRecordFactory } from '../support/sqs-event.ts';

const dynamo = useTestDynamoDb();
let table: string;

beforeAll(async () => {
  table = await dynamo.createTable('store');
});

const getItem = async (key: { PK: string; SK: string }) =>
  (await dynamo.doc.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true }))).Item;
const inboxItem = (idempotencyKey: string) => getItem(inboxKey('case-worker', idempotencyKey));
const quarantineItems = async () =>
  ((await dynamo.doc.send(new ScanCommand({ TableName: table, ConsistentRead: true }))).Items ?? []).filter(
    (item) => String(item.PK).startsWith('QUARANTINE#'),
  );
const payment = (overrides: Record<string, unknown> = {}) => {
  const accountId = `ACC-${randomUUID()}`;
  return envelopeFactory({
    payload: { paymentId: `PAY-${randomUUID()}`, accountId, amount: '10.50', currency: 'EUR' },
    ...overrides,
  });
};
/**
 * Makes `client` answer the requests that `refused` picks (by command name and the marshalled input) as DynamoDB does
 * when it throttles: a failing collaborator, the rest of its requests untouched.
 */
const throttle = (client: DynamoDBClient, refused: (command: string, input: string) => boolean) =>
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (refused(String(context.commandName), JSON.stringify(args.input))) {
        const error = new Error('The level of configured provisioned throughput for the table was exceeded.');
        throw Object.assign(error, { name: 'ProvisionedThroughputExceededException', $fault: 'client' });
      }
      return next(args);
    },
    { step: 'initialize', name: 'testThrottle' },
  );
const hashOf = (envelope: ReturnType<typeof envelopeFactory>) =>
  requestHash({
    messageType: envelope.messageType,
    schemaVersion: envelope.schemaVersion,
    payload: envelope.payload,
  });

describe('Function: processRecord() on the DynamoDB record store', () => {
  it('applies a new message: the domain items and the COMPLETED inbox item in one transaction', async () => {
    // Prepare
    const process = dynamoProcessor(dynamo, table, exampleDynamoHandlers);
    const envelope = payment();
    const p = envelope.payload as { paymentId: string; accountId: string };

    // Act
    const outcome = await process(sqsRecordFactory(envelope));

    // Assess
    expect(outcome).toMatchObject({ result: 'COMPLETED', acknowledged: true, attempts: 1 });
    expect(await getItem(ledgerItemKey(p.paymentId))).toMatchObject({ amount: 10.5, currency: 'EUR' });
    expect(await getItem(balanceItemKey(p.accountId, 'EUR'))).toMatchObject({ balance: 10.5, entries: 1 });
    const inbox = await inboxItem(envelope.idempotencyKey);
    expect(inbox).toMatchObject({
      status: 'COMPLETED',
      attempts: 1,
      requestHash: hashOf(envelope),
      resultRef: `ledger/${p.paymentId}`,
    });
    // TTL: source + DLQ retention (14 d each by default) + a day, from now.
    const expectedTtl = Math.floor(Date.now() / 1000) + 29 * 86_400;
    expect(Math.abs(Number(inbox?.ttl) - expectedTtl)).toBeLessThan(60);
  });

  it("carries the producer's trace id (AWSTraceHeader) to the outcome and the inbox item", async () => {
    // Prepare
    const process = dynamoProcessor(dynamo, table, exampleDynamoHandlers);
    const envelope = payment();
    const record = sqsRecordFactory(envelope);
    const traceId = '1-5759e988-bd862e3fe1be46a994272793';
    const traced = {
      ...record,
      attributes: {
        ...record.attributes,
        AWSTraceHeader: `Root=${traceId};Parent=53995c3f42cd8ad8;Sampled=1`,
      },
    };

    // Act
    const outcome = await process(traced);

    // Assess
    expect(outcome).toMatchObject({ result: 'COMPLETED', traceId });
    expect(await inboxItem(envelope.idempotencyKey)).toMatchObject({ traceId });
  });

  it('acknowledges a duplicate after COMPLETED without a second effect', async () => {
    // Prepare
    const process = dynamoProcessor(dynamo, table, exampleDynamoHandlers);
    const envelope = payment();
    const p = envelope.payload as { accountId: string };
    await process(sqsRecordFactory(envelope));

    // Act
    const again = await process(sqsRecordFactory(envelope, { receiveCount: 2 }));

    // Assess
    expect(again).toMatchObject({ result: 'DUPLICATE', acknowledged: true, attempts: 1 });
    expect(await getItem(balanceItemKey(p.accountId, 'EUR'))).toMatchObject({ balance: 10.5, entries: 1 });
  });

  it('acknowledges a payment replayed under a new key as COMPLETED without adding it twice (create-only ledger item)', async () => {
    // Prepare
    const process = dynamoProcessor(dynamo, table, exampleDynamoHandlers);
    const first = payment();
    const replay = envelopeFactory({ payload: first.payload });
    const p = first.payload as { accountId: string };
    await process(sqsRecordFactory(first));

    // Act
    const outcome = await process(sqsRecordFactory(replay));

    // Assess
    expect(outcome).toMatchObject({ result: 'COMPLETED', acknowledged: true });
    expect(await getItem(balanceItemKey(p.accountId, 'EUR'))).toMatchObject({ balance: 10.5, entries: 1 });
    expect(await inboxItem(replay.idempotencyKey)).toMatchObject({ status: 'COMPLETED' });
  });

  it('quarantines a reused key with another payload (IDEMPOTENCY_HASH_MISMATCH) and leaves the first, COMPLETED item as it is', async () => {
    // Prepare
    const process = dynamoProcessor(dynamo, table, exampleDynamoHandlers);
    const first = payment();
    await process(sqsRecordFactory(first));
    const other = payment({ idempotencyKey: first.idempotencyKey });

    // Act
    const outcome = await process(sqsRecordFactory(other));

    // Assess
    expect(outcome).toMatchObject({
      result: 'TERMINAL_FAILURE',
      acknowledged: true,
      quarantined: true,
      hashMismatch: true,
      failureCode: 'IDEMPOTENCY_HASH_MISMATCH',
    });
    expect(await inboxItem(first.idempotencyKey)).toMatchObject({
      status: 'COMPLETED',
      requestHash: hashOf(first),
    });
    const quarantined = (await quarantineItems()).filter(
      (item) => item.idempotencyKey === first.idempotencyKey,
    );
    expect(quarantined).toHaveLength(1);
    expect(quarantined[0]).toMatchObject({
      reasonCode: 'IDEMPOTENCY_HASH_MISMATCH',
      occurrences: 1,
      consumer: 'case-worker',
    });
    expect(JSON.parse(String(quarantined[0]?.body)).payload).toEqual(other.payload);
  });

  it('never rolls a case back: an older version is STALE_VERSION_SKIPPED (version guard)', async () => {
    // Prepare
    const process = dynamoProcessor(dynamo, table, exampleDynamoHandlers);
    const caseId = `CASE-${randomUUID()}`;
    await process(sqsRecordFactory(caseStageEnvelope(caseId, 5, { stage: 'REVIEW' })));

    // Act
    const older = await process(sqsRecordFactory(caseStageEnvelope(caseId, 4, { stage: 'INVESTIGATION' })));

    // Assess
    expect(older).toMatchObject({ result: 'STALE_VERSION_SKIPPED', acknowledged: true });
    expect(await getItem(caseItemKey(caseId))).toMatchObject({ stage: 'REVIEW', version: 5 });
    expect(await inboxItem(`case:${caseId}:stage:v4`)).toMatchObject({ status: 'COMPLETED' });
  });

  it('skips an older deadline request as stale, deciding from the case item the failed condition returned', async () => {
    // Prepare
    const process = dynamoProcessor(dynamo, table, exampleDynamoHandlers);
    const caseId = `CASE-${randomUUID()}`;
    const deadline = (effectiveAt: string, n: number) =>
      envelopeFactory({
        messageType: 'CaseDeadlineCalculationRequested',
        idempotencyKey: `case:${caseId}:deadline:${n}`,
        aggregateId: caseId,
        payload: { caseId, stage: 'REVIEW', effectiveAt },
      });
    await process(sqsRecordFactory(caseStageEnvelope(caseId, 1)));
    const newer = await process(sqsRecordFactory(deadline('2026-07-10T00:00:00Z', 2)));

    // Act
    const older = await process(sqsRecordFactory(deadline('2026-07-01T00:00:00Z', 1)));

    // Assess
    expect(newer).toMatchObject({ result: 'COMPLETED' });
    expect(older).toMatchObject({ result: 'STALE_VERSION_SKIPPED', acknowledged: true });
    expect(await getItem(caseItemKey(caseId))).toMatchObject({
      deadlineEffectiveAt: '2026-07-10T00:00:00.000Z',
      deadlineAt: '2026-07-24T00:00:00.000Z',
      deadlineVersion: 1,
    });
  });

  it('counts retryable failures on the inbox item and turns terminal at maxBusinessAttempts, with its quarantine item', async () => {
    // Prepare: a deadline for a case that never arrives; the envelope allows 3 attempts.
    const process = dynamoProcessor(dynamo, table, exampleDynamoHandlers);
    const caseId = `CASE-${randomUUID()}`;
    const envelope = envelopeFactory({
      messageType: 'CaseDeadlineCalculationRequested',
      idempotencyKey: `case:${caseId}:deadline:1`,
      aggregateType: 'case',
      aggregateId: caseId,
      attemptPolicy: { maxBusinessAttempts: 3 },
      payload: { caseId, stage: 'REVIEW', effectiveAt: '2026-07-06T10:00:00Z' },
    });

    // Act
    const outcomes = [];
    for (let delivery = 1; delivery <= 3; delivery += 1) {
      outcomes.push(await process(sqsRecordFactory(envelope, { receiveCount: delivery })));
    }

    // Assess
    expect(outcomes.map((o) => [o.result, o.failureCode, o.attempts])).toEqual([
      ['RETRYABLE_FAILURE', 'CASE_NOT_FOUND', 1],
      ['RETRYABLE_FAILURE', 'CASE_NOT_FOUND', 2],
      ['TERMINAL_FAILURE', 'CASE_NOT_FOUND', 3],
    ]);
    expect(outcomes[2]).toMatchObject({ acknowledged: true, quarantined: true });
    expect(await inboxItem(envelope.idempotencyKey)).toMatchObject({
      status: 'FAILED_TERMINAL',
      attempts: 3,
      failureCode: 'CASE_NOT_FOUND',
    });
    expect(
      (await quarantineItems()).filter((item) => item.idempotencyKey === envelope.idempotencyKey),
    ).toHaveLength(1);
    expect(await getItem({ PK: `CASE#${caseId}`, SK: 'DEADLINE#REVIEW_SLA' })).toBeUndefined();
  });

  it('keeps a terminal key terminal on redelivery, and reports it instead under policy dlq', async () => {
    // Prepare
    const process = dynamoProcessor(dynamo, table, exampleDynamoHandlers);
    const dlq = dynamoProcessor(dynamo, table, exampleDynamoHandlers, { terminalPolicy: 'dlq' });
    const caseId = `CASE-${randomUUID()}`;
    const envelope = envelopeFactory({
      messageType: 'CaseDeadlineCalculationRequested',
      idempotencyKey: `case:${caseId}:deadline:bad`,
      aggregateId: caseId,
      payload: { caseId, stage: 'NO_SUCH_STAGE', effectiveAt: '2026-07-06T10:00:00Z' },
    });
    const first = await process(sqsRecordFactory(envelope));

    // Act
    const again = await dlq(sqsRecordFactory(envelope, { receiveCount: 2 }));

    // Assess
    expect(first).toMatchObject({
      result: 'TERMINAL_FAILURE',
      failureCode: 'INVALID_STAGE',
      acknowledged: true,
    });
    expect(again).toMatchObject({
      result: 'TERMINAL_FAILURE',
      failureCode: 'INVALID_STAGE',
      acknowledged: false,
      quarantined: false,
    });
    expect(await inboxItem(envelope.idempotencyKey)).toMatchObject({
      status: 'FAILED_TERMINAL',
      attempts: 1,
    });
  });

  it('quarantines a poison message (not JSON) once per body, counting occurrences', async () => {
    // Prepare
    const process = dynamoProcessor(dynamo, table, exampleDynamoHandlers);
    const body = `not json ${randomUUID()}`;

    // Act
    const outcomes = [await process(sqsRecordFactory(body)), await process(sqsRecordFactory(body))];

    // Assess
    expect(outcomes.map((o) => [o.result, o.failureCode, o.acknowledged])).toEqual([
      ['TERMINAL_FAILURE', 'INVALID_JSON', true],
      ['TERMINAL_FAILURE', 'INVALID_JSON', true],
    ]);
    const items = (await quarantineItems()).filter((item) => item.body === body);
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ occurrences: 2, reasonCode: 'INVALID_JSON' });
    expect(items[0]?.ttl).toBeUndefined();
  });

  it('refuses more than 99 domain writes with a terminal error naming the limit', async () => {
    // Prepare
    const tooMany = defineDynamoHandler({
      messageType: 'TooManyWrites',
      schemaVersion: 1,
      payload: z.object({ n: z.int() }),
      async handle({ table: t, payload }) {
        return {
          writes: Array.from({ length: payload.n }, (_, i) => ({
            Put: { TableName: t, Item: { PK: `MANY#${i}`, SK: 'X' } },
          })),
        };
      },
    });
    const process = dynamoProcessor(dynamo, table, [tooMany]);
    const envelope = envelopeFactory({ messageType: 'TooManyWrites', payload: { n: 100 } });

    // Act
    const outcome = await process(sqsRecordFactory(envelope));

    // Assess
    expect(outcome).toMatchObject({
      result: 'TERMINAL_FAILURE',
      failureCode: 'DYNAMODB_TOO_MANY_WRITES',
      quarantined: true,
    });
    expect(outcome.failureMessage).toMatch(/returned 100 domain writes.*at most 99/);
    expect(await getItem({ PK: 'MANY#0', SK: 'X' })).toBeUndefined();
  });
});

describe("A handler's outbox event (dynamoOutboxWrite in its writes)", () => {
  /** OrderPlaced { orderId, total }: the order item and its OrderConfirmationRequested event, in one transaction. */
  const orderPlaced = defineDynamoHandler({
    messageType: 'OrderPlaced',
    schemaVersion: 1,
    payload: z.object({ orderId: z.string(), total: z.int(), eventKey: z.string() }),
    async handle({ table: t, payload }) {
      const { write } = await dynamoOutboxWrite(t, {
        ...envelopeFactory({
          messageType: 'OrderConfirmationRequested',
          idempotencyKey: payload.eventKey,
          aggregateType: 'order',
          aggregateId: payload.orderId,
          payload: { orderId: payload.orderId, total: payload.total },
        }),
      });
      return {
        writes: [
          {
            Put: { TableName: t, Item: { PK: `ORDER#${payload.orderId}`, SK: 'META', total: payload.total } },
          },
          write,
        ],
      };
    },
  });
  const order = (orderId: string, total: number, eventKey = `order:${orderId}:confirm`) =>
    envelopeFactory({
      messageType: 'OrderPlaced',
      idempotencyKey: `order:${orderId}:placed:${total}`,
      aggregateType: 'order',
      aggregateId: orderId,
      payload: { orderId, total, eventKey },
    });

  it('commits the event with the domain write and the inbox completion, once for a redelivery', async () => {
    // Prepare
    const process = dynamoProcessor(dynamo, table, [orderPlaced]);
    const orderId = `o-${randomUUID()}`;
    const record = sqsRecordFactory(order(orderId, 42));

    // Act
    const first = await process(record);
    const again = await process({ ...record, receiptHandle: `rh-${randomUUID()}` });

    // Assess
    expect([first.result, again.result]).toEqual(['COMPLETED', 'DUPLICATE']);
    expect(await getItem({ PK: `ORDER#${orderId}`, SK: 'META' })).toMatchObject({ total: 42 });
    const event = await getItem(outboxKey(`order:${orderId}:confirm`));
    expect(event).toMatchObject({ status: 'PENDING', messageType: 'OrderConfirmationRequested' });
    expect(JSON.parse(String(event?.envelope)).payload).toEqual({ orderId, total: 42 });
  });

  it('is terminal OUTBOX_CONFLICT when its event key names another event, and applies nothing of the record', async () => {
    // Prepare: order A's event is in the outbox; order B's handler reuses A's event key with other content.
    const process = dynamoProcessor(dynamo, table, [orderPlaced]);
    const a = `o-${randomUUID()}`;
    const b = `o-${randomUUID()}`;
    await process(sqsRecordFactory(order(a, 10)));

    // Act
    const outcome = await process(sqsRecordFactory(order(b, 20, `order:${a}:confirm`)));

    // Assess
    expect(outcome).toMatchObject({
      result: 'TERMINAL_FAILURE',
      failureCode: 'OUTBOX_CONFLICT',
      quarantined: true,
    });
    expect(outcome.failureMessage).toMatch(/already in the outbox .* use a new key for a different event/);
    expect(await getItem({ PK: `ORDER#${b}`, SK: 'META' })).toBeUndefined();
    expect(JSON.parse(String((await getItem(outboxKey(`order:${a}:confirm`)))?.envelope)).payload).toEqual({
      orderId: a,
      total: 10,
    });
  });
});

describe('Failures of the DynamoDB store itself', () => {
  it('reports a terminal failure whose quarantine transaction fails, flagged quarantineFailed, with its own code', async () => {
    // Prepare: a handler that fails terminally; the store's client throttles every transaction with a quarantine item.
    const unfixable = defineDynamoHandler({
      messageType: 'Unfixable',
      schemaVersion: 1,
      payload: z.object({ n: z.number() }),
      async handle() {
        throw new TerminalError('NOT_FIXABLE', 'this message can never be applied');
      },
    });
    const process = dynamoProcessor(dynamo, table, [unfixable]);
    throttle(
      process.store.client,
      (command, input) => command === 'TransactWriteItemsCommand' && input.includes('QUARANTINE#'),
    );
    const envelope = envelopeFactory({ messageType: 'Unfixable', payload: { n: 1 } });

    // Act
    const outcome = await process(sqsRecordFactory(envelope));

    // Assess: reported (never acknowledged without its quarantine item), the inbox item still held by the lease
    expect(outcome).toMatchObject({
      result: 'RETRYABLE_FAILURE',
      acknowledged: false,
      failureCode: 'NOT_FIXABLE',
      quarantineFailed: true,
      attempts: 1,
    });
    expect(outcome.failureMessage).toContain('[quarantine failed: THROTTLED]');
    expect(await inboxItem(envelope.idempotencyKey)).toMatchObject({ status: 'PROCESSING' });
    expect(await quarantineItems()).not.toContainEqual(
      expect.objectContaining({ idempotencyKey: envelope.idempotencyKey }),
    );
  });

  it('bounds a throttled gate by the attempt policy: retried below maxBusinessAttempts, quarantined at it', async () => {
    // Prepare: the store's client throttles every gate (PutItem); the envelope allows 3 attempts.
    const process = dynamoProcessor(dynamo, table, exampleDynamoHandlers);
    throttle(process.store.client, (command) => command === 'PutItemCommand');
    const envelope = payment({ attemptPolicy: { maxBusinessAttempts: 3, notBefore: null } });
    const delivery = (receiveCount: number) => sqsRecordFactory(envelope, { receiveCount });

    // Act
    const second = await process(delivery(2));
    const third = await process(delivery(3));

    // Assess: SQS's receive count is the count (the gate wrote nothing); at 3 the message is terminal, quarantined
    expect(second).toMatchObject({ result: 'RETRYABLE_FAILURE', failureCode: 'THROTTLED' });
    expect(third).toMatchObject({ result: 'TERMINAL_FAILURE', failureCode: 'THROTTLED', quarantined: true });
    expect(third.failureMessage).toContain('[terminal: attempt 3 of maxBusinessAttempts 3]');
    expect(await inboxItem(envelope.idempotencyKey)).toBeUndefined();
    expect(await quarantineItems()).toContainEqual(
      expect.objectContaining({ idempotencyKey: envelope.idempotencyKey, reasonCode: 'THROTTLED' }),
    );
  });
});

describe('Stale PROCESSING: a worker killed after the gate', () => {
  it('is in progress elsewhere until its lease expires, then taken over exactly once', async () => {
    // Prepare: a delivery passed the gate and its worker died (lease of 1 s).
    const envelope = payment();
    const p = envelope.payload as { accountId: string };
    const process = dynamoProcessor(dynamo, table, exampleDynamoHandlers);
    const gate = await claimDynamoInbox(
      process.store,
      { consumer: 'case-worker', envelope, requestHash: hashOf(envelope), sqsMessageId: 'dead' },
      { nowMs: Date.now(), leaseMs: 1_000 },
    );
    const early = await process(sqsRecordFactory(envelope, { receiveCount: 2 }));
    // Two workers whose clocks are past the lease.
    const later = () => Date.now() + 60_000;
    const a = dynamoProcessor(dynamo, table, exampleDynamoHandlers, { now: later });
    const b = dynamoProcessor(dynamo, table, exampleDynamoHandlers, { now: later });

    // Act
    const [first, second] = await Promise.all([
      a(sqsRecordFactory(envelope, { receiveCount: 3 })),
      b(sqsRecordFactory(envelope, { receiveCount: 3 })),
    ]);

    // Assess
    expect(gate.kind).toBe('claimed');
    expect(early).toMatchObject({ result: 'RETRYABLE_FAILURE', failureCode: 'IN_PROGRESS_ELSEWHERE' });
    const results = [first.result, second.result].sort();
    expect(results.filter((r) => r === 'COMPLETED')).toHaveLength(1);
    expect(
      results.filter((r) => r === 'COMPLETED' || r === 'DUPLICATE' || r === 'RETRYABLE_FAILURE'),
    ).toHaveLength(2);
    expect(await getItem(balanceItemKey(p.accountId, 'EUR'))).toMatchObject({ balance: 10.5, entries: 1 });
    expect(await inboxItem(envelope.idempotencyKey)).toMatchObject({ status: 'COMPLETED', attempts: 2 });
  });

  it('lets the redelivery of the message that took the lease take it over at once; other copies still wait', async () => {
    // Prepare: message m passed the gate (a lease of 10 minutes) and its worker lost DynamoDB before it could write
    // its failure: the item stays PROCESSING under a live lease. SQS hands m back once that receive is over.
    const envelope = payment();
    const p = envelope.payload as { accountId: string };
    const process = dynamoProcessor(dynamo, table, exampleDynamoHandlers);
    await claimDynamoInbox(
      process.store,
      { consumer: 'case-worker', envelope, requestHash: hashOf(envelope), sqsMessageId: 'm' },
      { nowMs: Date.now(), leaseMs: 600_000 },
    );

    // Act
    const copy = await process(sqsRecordFactory(envelope, { messageId: 'producer-duplicate' }));
    const redelivery = await process(sqsRecordFactory(envelope, { messageId: 'm', receiveCount: 2 }));

    // Assess: the duplicate sent by the producer waits for the lease; m's redelivery is attempt 2 and completes.
    expect(copy).toMatchObject({ result: 'RETRYABLE_FAILURE', failureCode: 'IN_PROGRESS_ELSEWHERE' });
    expect(redelivery).toMatchObject({ result: 'COMPLETED' });
    expect(await getItem(balanceItemKey(p.accountId, 'EUR'))).toMatchObject({ balance: 10.5, entries: 1 });
    expect(await inboxItem(envelope.idempotencyKey)).toMatchObject({
      status: 'COMPLETED',
      attempts: 2,
      lastMessageId: 'm',
    });
  });

  it('answers a reused key whose first delivery holds a live lease IN_PROGRESS_ELSEWHERE, and freezes it once the lease is gone', async () => {
    // Prepare: a delivery of A passed the gate (lease of 1 s) and its worker died; B reuses A's key.
    const a = payment();
    const b = payment({ idempotencyKey: a.idempotencyKey });
    const process = dynamoProcessor(dynamo, table, exampleDynamoHandlers);
    await claimDynamoInbox(
      process.store,
      { consumer: 'case-worker', envelope: a, requestHash: hashOf(a), sqsMessageId: 'dead' },
      { nowMs: Date.now(), leaseMs: 1_000 },
    );

    // Act
    const whileHeld = await process(sqsRecordFactory(b));
    const afterLease = await dynamoProcessor(dynamo, table, exampleDynamoHandlers, {
      now: () => Date.now() + 60_000,
    })(sqsRecordFactory(b, { receiveCount: 2 }));

    // Assess: the holder decides first, as under PostgreSQL's row lock; then the key is frozen with A's request.
    expect(whileHeld).toMatchObject({ result: 'RETRYABLE_FAILURE', failureCode: 'IN_PROGRESS_ELSEWHERE' });
    expect(afterLease).toMatchObject({
      result: 'TERMINAL_FAILURE',
      failureCode: 'IDEMPOTENCY_HASH_MISMATCH',
    });
    expect(await inboxItem(a.idempotencyKey)).toMatchObject({
      status: 'FAILED_TERMINAL',
      failureCode: 'IDEMPOTENCY_HASH_MISMATCH',
      requestHash: hashOf(a),
    });
  });

  it('cancels the slow worker whose lease was taken over: LEASE_LOST, nothing of it applied', async () => {
    // Prepare: A's handler waits until B has taken the key over and completed it.
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered: () => void = () => {};
    const inHandler = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const counter = (waitFirst: boolean) =>
      defineDynamoHandler({
        messageType: 'CountOnce',
        schemaVersion: 1,
        payload: z.object({ id: z.string() }),
        async handle({ table: t, payload }) {
          if (waitFirst) {
            entered();
            await released;
          }
          return {
            writes: [
              {
                Update: {
                  TableName: t,
                  Key: { PK: `COUNT#${payload.id}`, SK: 'X' },
                  UpdateExpression: 'ADD hits :one',
                  ExpressionAttributeValues: { ':one': 1 },
                },
              },
            ],
          };
        },
      });
    const envelope = envelopeFactory({ messageType: 'CountOnce', payload: { id: randomUUID() } });
    const id = (envelope.payload as { id: string }).id;
    const slow = dynamoProcessor(dynamo, table, [counter(true)], { leaseMarginSeconds: 0 });
    const fast = dynamoProcessor(dynamo, table, [counter(false)], { now: () => Date.now() + 60_000 });

    // Act
    const slowOutcome = slow(sqsRecordFactory(envelope), { remainingMs: 30_000 });
    await inHandler;
    const fastOutcome = await fast(sqsRecordFactory(envelope, { receiveCount: 2 }));
    release();

    // Assess
    expect(fastOutcome).toMatchObject({ result: 'COMPLETED', attempts: 2 });
    expect(await slowOutcome).toMatchObject({
      result: 'RETRYABLE_FAILURE',
      failureCode: 'LEASE_LOST',
      acknowledged: false,
    });
    expect(await getItem({ PK: `COUNT#${id}`, SK: 'X' })).toMatchObject({ hits: 1 });
    expect(await inboxItem(envelope.idempotencyKey)).toMatchObject({ status: 'COMPLETED', attempts: 2 });
  });
});

describe('A cancelled transaction, classified by its reasons', () => {
  /** A handler whose one domain write fails its condition, with the given rule. */
  const conditional = (rule?: ConditionFailedRule) =>
    defineDynamoHandler({
      messageType: 'Conditional',
      schemaVersion: 1,
      payload: z.object({ id: z.string() }),
      async handle({ table: t, payload }) {
        return {
          writes: [
            {
              Put: { TableName: t, Item: { PK: `SIDE#${payload.id}`, SK: 'X' } },
            },
            {
              Update: {
                TableName: t,
                Key: { PK: `GUARDED#${payload.id}`, SK: 'X' },
                UpdateExpression: 'SET touched = :yes',
                ConditionExpression: 'attribute_exists(PK)',
                ExpressionAttributeValues: { ':yes': true },
              },
              ...(rule ? { onConditionFailed: rule } : {}),
            },
          ],
        };
      },
    });
  const run = async (rule: ConditionFailedRule | undefined) => {
    const process = dynamoProcessor(dynamo, table, [conditional(rule)]);
    const envelope = envelopeFactory({
      messageType: 'Conditional',
      payload: { id: randomUUID() },
      attemptPolicy: { maxBusinessAttempts: 5 },
    });
    const outcome = await process(sqsRecordFactory(envelope));
    const id = (envelope.payload as { id: string }).id;
    return { outcome, envelope, side: await getItem({ PK: `SIDE#${id}`, SK: 'X' }) };
  };

  it("ConditionalCheckFailed on a domain item with rule 'stale': STALE_VERSION_SKIPPED, inbox COMPLETED, no other write", async () => {
    const { outcome, envelope, side } = await run(() => 'stale');
    expect(outcome).toMatchObject({ result: 'STALE_VERSION_SKIPPED', acknowledged: true });
    expect(side).toBeUndefined();
    expect(await inboxItem(envelope.idempotencyKey)).toMatchObject({ status: 'COMPLETED' });
  });

  it("ConditionalCheckFailed on a domain item with rule 'applied': COMPLETED, no other write", async () => {
    const { outcome, envelope, side } = await run(() => 'applied');
    expect(outcome).toMatchObject({ result: 'COMPLETED', acknowledged: true });
    expect(side).toBeUndefined();
    expect(await inboxItem(envelope.idempotencyKey)).toMatchObject({ status: 'COMPLETED' });
  });

  it('ConditionalCheckFailed on a domain item with a TerminalError rule: terminal, quarantined', async () => {
    const { outcome, envelope } = await run(
      () => new TerminalError('GUARD_MISSING', 'the guarded item does not exist'),
    );
    expect(outcome).toMatchObject({
      result: 'TERMINAL_FAILURE',
      failureCode: 'GUARD_MISSING',
      quarantined: true,
    });
    expect(await inboxItem(envelope.idempotencyKey)).toMatchObject({
      status: 'FAILED_TERMINAL',
      failureCode: 'GUARD_MISSING',
    });
  });

  it('ConditionalCheckFailed on a domain item with a RetryableError rule: retryable, counted', async () => {
    const { outcome, envelope } = await run((current) =>
      current === undefined
        ? new RetryableError('GUARD_NOT_YET', 'the guarded item is not there yet')
        : 'stale',
    );
    expect(outcome).toMatchObject({ result: 'RETRYABLE_FAILURE', failureCode: 'GUARD_NOT_YET', attempts: 1 });
    expect(await inboxItem(envelope.idempotencyKey)).toMatchObject({
      status: 'FAILED_RETRYABLE',
      attempts: 1,
    });
  });

  it('ConditionalCheckFailed on a domain item without a rule: retryable DOMAIN_CONDITION_FAILED', async () => {
    const { outcome } = await run(undefined);
    expect(outcome).toMatchObject({ result: 'RETRYABLE_FAILURE', failureCode: 'DOMAIN_CONDITION_FAILED' });
    expect(outcome.failureMessage).toMatch(/domain write 1 failed/);
  });

  it('ValidationError on a domain item: terminal DYNAMODB_VALIDATION_ERROR', async () => {
    // Prepare: an update that adds to an attribute of the wrong type (a string), which DynamoDB refuses.
    const id = randomUUID();
    const bad = defineDynamoHandler({
      messageType: 'BadWrite',
      schemaVersion: 1,
      payload: z.object({ id: z.string() }),
      async handle({ table: t }) {
        return {
          writes: [
            { Put: { TableName: t, Item: { PK: `TEXT#${id}`, SK: 'X', n: 'text' } } },
            {
              Update: {
                TableName: t,
                Key: { PK: `OTHER#${id}`, SK: 'X' },
                UpdateExpression: 'SET total = missing + :one',
                ExpressionAttributeValues: { ':one': 1 },
              },
            },
          ],
        };
      },
    });
    const process = dynamoProcessor(dynamo, table, [bad]);
    const envelope = envelopeFactory({ messageType: 'BadWrite', payload: { id } });

    // Act
    const outcome = await process(sqsRecordFactory(envelope));

    // Assess
    expect(outcome).toMatchObject({
      result: 'TERMINAL_FAILURE',
      failureCode: 'DYNAMODB_VALIDATION_ERROR',
      quarantined: true,
    });
    expect(await getItem({ PK: `TEXT#${id}`, SK: 'X' })).toBeUndefined();
    expect(await inboxItem(envelope.idempotencyKey)).toMatchObject({ status: 'FAILED_TERMINAL' });
  });
});
