import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambda/config.ts';
import {
  balanceItemKey,
  caseItemKey,
  exampleDynamoHandlers,
  ledgerItemKey,
} from '../../lambda/domain/dynamodb/index.ts';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { createDynamoWorkerFromConfig } from '../../lambda/runtimes/lambda/create-dynamo-worker-from-config.ts';
import {
  createWorker,
  type WorkerHandler,
  type WorkerOptions,
} from '../../lambda/runtimes/lambda/create-worker.ts';
import { createWorkerFromConfig } from '../../lambda/runtimes/lambda/create-worker-from-config.ts';
import { createDynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import { inboxKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import { createTestDatabase } from '../support/database.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { jsonWithNestedArrays, NESTED } from '../support/nested-json.ts';
import { envelopeFactory, lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';

// The engine's acceptance tests that hold for any store, run on PostgreSQL and on DynamoDB: the same worker
// (createWorker → createBatchEngine), the same example domain in each store's handlers, the state read back from
// each store.

const db = await createTestDatabase();
const dynamo = useTestDynamoDb();
let table: string;
beforeAll(async () => {
  table = await dynamo.createTable('acceptance');
});

/** What a test needs of a store: a worker on it (a new client each), and its state read back. */
interface StoreFixture {
  worker(overrides?: Partial<WorkerOptions>): WorkerHandler;
  inboxStatus(key: string): Promise<string | undefined>;
  /** Ledger entries of a payment (0 or 1) and how often its account's balance was added to. */
  payment(paymentId: string, accountId: string): Promise<{ ledger: number; additions: number }>;
  caseState(caseId: string): Promise<{ stage?: string; version?: number; deadlineVersion?: number }>;
  quarantineReasons(match: { idempotencyKey?: string; body?: string }): Promise<string[]>;
}

const quiet = () => ({
  logger: new Logger({ serviceName: 'case-worker' }),
  metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
});

const postgresStore: StoreFixture = {
  worker: (overrides = {}) =>
    createWorker({
      consumer: 'case-worker',
      handlers: exampleHandlers,
      sql: db.client({ max: 1 }),
      ...quiet(),
      ...overrides,
    }),
  async inboxStatus(key) {
    const [row] =
      await db.sql`select status from worker_inbox where consumer = 'case-worker' and idempotency_key = ${key}`;
    return row?.status;
  },
  async payment(paymentId) {
    const [row] =
      await db.sql`select count(*)::int as n from ledger_entries where source_event_id = ${paymentId}`;
    // PostgreSQL's example keeps no balance: a ledger row is the addition.
    return { ledger: row?.n ?? 0, additions: row?.n ?? 0 };
  },
  async caseState(caseId) {
    const [row] = await db.sql`select stage, version, deadline_version from cases where case_id = ${caseId}`;
    return { stage: row?.stage, version: row?.version, deadlineVersion: row?.deadline_version };
  },
  async quarantineReasons({ idempotencyKey, body }) {
    const rows = idempotencyKey
      ? await db.sql`select reason_code from worker_quarantine where idempotency_key = ${idempotencyKey}`
      : await db.sql`select reason_code from worker_quarantine where body = ${body ?? ''}`;
    return rows.map((row) => row.reason_code as string);
  },
};

const get = async (key: { PK: string; SK: string }) =>
  (await dynamo.doc.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true }))).Item;

const dynamoStore: StoreFixture = {
  worker: (overrides = {}) =>
    createWorker({
      consumer: 'case-worker',
      handlers: exampleDynamoHandlers,
      store: createDynamoStore({ client: dynamo.newClient(), tableName: table }),
      recordConcurrency: 10,
      ...quiet(),
      ...overrides,
    }),
  async inboxStatus(key) {
    return (await get(inboxKey('case-worker', key)))?.status as string | undefined;
  },
  async payment(paymentId, accountId) {
    const ledger = (await get(ledgerItemKey(paymentId))) ? 1 : 0;
    const balance = await get(balanceItemKey(accountId, 'EUR'));
    return { ledger, additions: Number(balance?.entries ?? 0) };
  },
  async caseState(caseId) {
    const item = await get(caseItemKey(caseId));
    return {
      stage: item?.stage as string | undefined,
      version: item?.version as number | undefined,
      deadlineVersion: item?.deadlineVersion as number | undefined,
    };
  },
  async quarantineReasons({ idempotencyKey, body }) {
    const { Items = [] } = await dynamo.doc.send(new ScanCommand({ TableName: table, ConsistentRead: true }));
    return Items.filter(
      (item) =>
        String(item.PK).startsWith('QUARANTINE#') &&
        (idempotencyKey ? item.idempotencyKey === idempotencyKey : item.body === body),
    ).map((item) => String(item.reasonCode));
  },
};

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
const stageChanged = (caseId: string, version: number, stage = 'INVESTIGATION') =>
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
const again = (record: ReturnType<typeof sqsRecordFactory>, receiveCount: number) => ({
  ...record,
  receiptHandle: `rh-${randomUUID()}`,
  attributes: { ...record.attributes, ApproximateReceiveCount: String(receiveCount) },
});

describe.each([
  ['PostgreSQL', postgresStore],
  ['DynamoDB', dynamoStore],
] as const)('Engine acceptance on %s', (_name, store) => {
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
    expect(await store.payment(original.paymentId, original.accountId)).toEqual({ ledger: 1, additions: 1 });
    expect(await store.inboxStatus(original.envelope.idempotencyKey)).toBe('COMPLETED');
    expect(await store.quarantineReasons({ idempotencyKey: original.envelope.idempotencyKey })).toEqual([
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
      jsonWithNestedArrays({ ...deep.envelope, payload: { ...deep.envelope.payload, extra: NESTED } }, 5_000),
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
});

describe('Function: createWorker() with a DynamoDB store', () => {
  it('refuses PostgreSQL handlers, a per-batch commit mode and sql beside store, naming each fix', () => {
    // Act
    const build = () =>
      createWorker({
        consumer: 'case-worker',
        handlers: exampleHandlers,
        store: createDynamoStore({ client: dynamo.client, tableName: table }),
        sql: db.sql,
        commitMode: 'per-batch',
        recordConcurrency: 1,
      });

    // Assess
    expect(build).toThrow(/not both/);
    expect(build).toThrow(
      /are PostgreSQL handlers \(defineHandler\) and the store is DynamoDB; use defineDynamoHandler/,
    );
    expect(build).toThrow(/commitMode per-batch is a PostgreSQL mode/);
  });

  it('refuses DynamoDB handlers on a PostgreSQL worker', () => {
    expect(() =>
      createWorker({ consumer: 'case-worker', handlers: exampleDynamoHandlers, sql: db.sql }),
    ).toThrow(/CaseStageChanged, CaseDeadlineCalculationRequested, PaymentCaptured are DynamoDB handlers/);
  });
});

describe('Function: createDynamoWorkerFromConfig() with WORKER_STORE=dynamodb', () => {
  it('runs the DynamoDB handlers on the table of DYNAMODB_TABLE at DYNAMODB_ENDPOINT, without a database', async () => {
    // Prepare
    const config = loadConfig({
      WORKER_STORE: 'dynamodb',
      DYNAMODB_TABLE: table,
      DYNAMODB_ENDPOINT: dynamo.endpoint,
      AWS_REGION: 'us-east-1',
    });
    const worker = createDynamoWorkerFromConfig({ config, handlers: exampleDynamoHandlers });
    const caseId = `CASE-${randomUUID()}`;

    // Act
    const response = await worker(
      sqsEvent([sqsRecordFactory(stageChanged(caseId, 2, 'REVIEW'))]),
      lambdaContext(),
    );

    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect(await dynamoStore.caseState(caseId)).toMatchObject({ stage: 'REVIEW', version: 2 });
    expect(await dynamoStore.inboxStatus(`case:${caseId}:stage:v2`)).toBe('COMPLETED');
  });
});

describe('Function: createWorkerFromConfig() and createDynamoWorkerFromConfig(), each given the other store', () => {
  it('refuses WORKER_STORE=dynamodb in the PostgreSQL wiring, naming the DynamoDB one', () => {
    // Prepare
    const config = loadConfig({ WORKER_STORE: 'dynamodb', DYNAMODB_TABLE: table, AWS_REGION: 'us-east-1' });

    // Act
    const build = () => createWorkerFromConfig({ config, handlers: exampleHandlers });

    // Assess
    expect(build).toThrow(
      /WORKER_STORE is "dynamodb", but createWorkerFromConfig builds a PostgreSQL worker\. Build a DynamoDB worker with createDynamoWorkerFromConfig from sqs-inbox-worker\/dynamodb/,
    );
  });

  it('refuses a PostgreSQL configuration in the DynamoDB wiring, naming WORKER_STORE and the PostgreSQL one', () => {
    // Prepare: WORKER_STORE unset, the PostgreSQL default.
    const config = loadConfig({ DATABASE_URL: db.url });

    // Act
    const build = () => createDynamoWorkerFromConfig({ config, handlers: exampleDynamoHandlers });

    // Assess
    expect(build).toThrow(/WORKER_STORE is not "dynamodb".*Set WORKER_STORE=dynamodb and DYNAMODB_TABLE/);
    expect(build).toThrow(/createWorkerFromConfig from sqs-inbox-worker\/postgres/);
  });
});
