import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, QueryCommand, ScanCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambda/config.ts';
import {
  balanceItemKey,
  caseEscalationRequestedDynamo,
  caseItemKey,
  exampleDynamoHandlers,
  exampleDynamoHandlersFor,
  ledgerItemKey,
} from '../../lambda/domain/dynamodb/index.ts';
import { caseEscalationRequested, exampleHandlers } from '../../lambda/domain/index.ts';
import { collectHealth } from '../../lambda/health/collect-health.ts';
import { enqueueOutbox } from '../../lambda/outbox/enqueue-outbox.ts';
import { OutboxConflictError } from '../../lambda/outbox/errors.ts';
import { createDynamoWorkerFromConfig } from '../../lambda/runtimes/lambda/create-dynamo-worker-from-config.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import { createWorkerFromConfig } from '../../lambda/runtimes/lambda/create-worker-from-config.ts';
import { collectDynamoHealth } from '../../lambda/stores/dynamodb/collect-dynamo-health.ts';
import { dynamoOutboxWrite } from '../../lambda/stores/dynamodb/dynamo-outbox-write.ts';
import { createDynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import { EFFECT_PK_PREFIX, EFFECT_SK, inboxKey, outboxKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import { dynamoDlqInbox } from '../../tools/ops/stores/dynamodb/dynamo-dlq-inbox.ts';
import { postgresDlqInbox } from '../../tools/ops/stores/postgres/postgres-dlq-inbox.ts';
import { createTestDatabase } from '../support/database.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { startFakeNotificationProvider } from '../support/fake-notification-provider.ts';
import { envelopeFactory, lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';
import { describeStoreConformance, type StoreFixture, stageChanged } from '../support/store-conformance.ts';

// The Store contract's conformance suite (test/support/store-conformance.ts), once per store and commit mode: each
// fixture builds a worker on its store (a new client each) and reads its state back. A third store adds its fixture
// and one describeStoreConformance line here. Below it, what is particular to one store.

const db = await createTestDatabase();
const dynamo = useTestDynamoDb();
/** The notification service of the shipped DynamoDB entry's escalation example (NOTIFICATION_URL). */
const notificationService = await startFakeNotificationProvider();
let table: string;
beforeAll(async () => {
  table = await dynamo.createTable('acceptance');
});

const quiet = () => ({
  logger: new Logger({ serviceName: 'case-worker' }),
  metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
});

const postgresStore: StoreFixture = {
  worker: (overrides = {}, { provider } = {}) =>
    createWorker({
      consumer: 'case-worker',
      // The effect log on a client of its own, as the deployed worker has it (exampleHandlersFor).
      handlers: provider
        ? [...exampleHandlers, caseEscalationRequested({ effectsSql: db.client({ max: 1 }), provider })]
        : exampleHandlers,
      sql: db.client({ max: 1 }),
      ...quiet(),
      ...overrides,
    }),
  async inboxStatus(key) {
    const [row] =
      await db.sql`select status from worker_inbox where consumer = 'case-worker' and idempotency_key = ${key}`;
    return row?.status;
  },
  async effectLogEntry(key) {
    const [row] =
      await db.sql`select status, attempts, provider_reference from external_effect_log where effect_key = ${key}`;
    return row
      ? { status: row.status, attempts: row.attempts, reference: row.provider_reference ?? undefined }
      : undefined;
  },
  async notifications(caseId) {
    const rows =
      await db.sql`select effect_key, provider_reference from case_notifications where case_id = ${caseId}`;
    return rows.map((row) => ({ effectKey: row.effect_key, reference: row.provider_reference }));
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
  async produce(caseId, envelope, { fail = false } = {}) {
    try {
      await db.sql.begin(async (tx) => {
        await tx`insert into cases (case_id, stage, version) values (${caseId}, 'OPEN', 1)`;
        await enqueueOutbox(tx, envelope);
        if (fail) throw new RolledBack();
      });
      return 'committed';
    } catch (error) {
      if (error instanceof RolledBack) return 'rolled back';
      if (error instanceof OutboxConflictError) return 'conflict';
      throw error;
    }
  },
  async outboxEvent(key) {
    const [row] = await db.sql`select status, envelope from outbox_events where idempotency_key = ${key}`;
    return row ? { status: row.status, envelope: row.envelope as Envelope } : undefined;
  },
  health: (consumer) => collectHealth(db.sql, { consumer }),
  dlqInbox: () => postgresDlqInbox(db.sql),
};

/** Thrown inside a producer transaction to roll it back after its writes. */
class RolledBack extends Error {}

const get = async (key: { PK: string; SK: string }) =>
  (await dynamo.doc.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true }))).Item;

const dynamoStore: StoreFixture = {
  worker: (overrides = {}, { provider } = {}) =>
    createWorker({
      consumer: 'case-worker',
      handlers: provider
        ? [...exampleDynamoHandlers, caseEscalationRequestedDynamo({ provider })]
        : exampleDynamoHandlers,
      store: createDynamoStore({ client: dynamo.newClient(), tableName: table }),
      recordConcurrency: 10,
      ...quiet(),
      ...overrides,
    }),
  async inboxStatus(key) {
    return (await get(inboxKey('case-worker', key)))?.status as string | undefined;
  },
  async effectLogEntry(key) {
    const item = await get({ PK: `${EFFECT_PK_PREFIX}${key}`, SK: EFFECT_SK });
    return item
      ? {
          status: String(item.status),
          attempts: Number(item.attempts),
          reference: item.providerReference as string | undefined,
        }
      : undefined;
  },
  async notifications(caseId) {
    const { Items = [] } = await dynamo.doc.send(
      new QueryCommand({
        TableName: table,
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :notification)',
        ExpressionAttributeValues: { ':pk': caseItemKey(caseId).PK, ':notification': 'NOTIFICATION#' },
        ConsistentRead: true,
      }),
    );
    return Items.map((item) => ({
      effectKey: String(item.effectKey),
      reference: String(item.providerReference),
    }));
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
  async produce(caseId, envelope, { fail = false } = {}) {
    const { item } = await dynamoOutboxWrite(table, envelope);
    const state = { Put: { TableName: table, Item: { ...caseItemKey(caseId), stage: 'OPEN', version: 1 } } };
    // A transaction that fails after both writes: a condition no item meets, checked last.
    const failing = {
      ConditionCheck: {
        TableName: table,
        Key: { PK: 'NONE#', SK: 'NONE' },
        ConditionExpression: 'attribute_exists(PK)',
      },
    };
    try {
      await dynamo.doc.send(
        new TransactWriteCommand({ TransactItems: [state, item, ...(fail ? [failing] : [])] }),
      );
      return 'committed';
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      return error.CancellationReasons?.[1]?.Code === 'ConditionalCheckFailed' ? 'conflict' : 'rolled back';
    }
  },
  async outboxEvent(key) {
    const item = await get(outboxKey(key));
    return item
      ? { status: String(item.status), envelope: JSON.parse(String(item.envelope)) as Envelope }
      : undefined;
  },
  health: (consumer) => collectDynamoHealth({ doc: dynamo.doc, tableName: table }, { consumer }),
  dlqInbox: () => dynamoDlqInbox({ doc: dynamo.doc, tableName: table }),
};

describeStoreConformance('PostgreSQL, commit mode per-message', postgresStore);
describeStoreConformance('PostgreSQL, commit mode per-batch', {
  ...postgresStore,
  worker: (overrides = {}, effects = {}) =>
    postgresStore.worker({ commitMode: 'per-batch', ...overrides }, effects),
  runsPerFailedDelivery: 2,
});
describeStoreConformance('DynamoDB', dynamoStore);

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
    ).toThrow(
      /CaseStageChanged, CaseDeadlineCalculationRequested, PaymentCaptured, DocumentMetadataExtractionRequested are DynamoDB handlers/,
    );
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

  it('runs the escalation example of the shipped entry with NOTIFICATION_URL, its effect log items expiring with the inbox items', async () => {
    // Prepare: the environment of the deployed DynamoDB worker (lambda/handlers/worker-dynamodb.ts), one day of
    // retention per queue.
    const config = loadConfig({
      WORKER_STORE: 'dynamodb',
      DYNAMODB_TABLE: table,
      DYNAMODB_ENDPOINT: dynamo.endpoint,
      AWS_REGION: 'us-east-1',
      NOTIFICATION_URL: notificationService.url,
      RETENTION_SOURCE_SECONDS: '86400',
      RETENTION_DLQ_SECONDS: '86400',
    });
    const worker = createDynamoWorkerFromConfig({ config, handlers: exampleDynamoHandlersFor });
    const caseId = `CASE-${randomUUID()}`;
    const escalation = envelopeFactory({
      messageType: 'CaseEscalationRequested',
      idempotencyKey: `case:${caseId}:escalation:1`,
      payload: { caseId, recipient: 'duty-officer@example.com' },
    });
    const key = `case-worker/escalation-notification:${escalation.idempotencyKey}`;
    await worker(sqsEvent([sqsRecordFactory(stageChanged(caseId, 1))]), lambdaContext()); // its case first

    // Act
    const response = await worker(sqsEvent([sqsRecordFactory(escalation)]), lambdaContext());

    // Assess: notified once, recorded, and the log item's ttl is the inbox items' (2 days of retention + 1 day).
    expect(response).toEqual({ batchItemFailures: [] });
    expect(notificationService.keys).toEqual([key]);
    expect(await dynamoStore.notifications(caseId)).toEqual([
      { effectKey: key, reference: (await dynamoStore.effectLogEntry(key))?.reference },
    ]);
    const item = await get({ PK: `${EFFECT_PK_PREFIX}${key}`, SK: EFFECT_SK });
    expect(Number(item?.ttl) - Date.now() / 1000).toBeGreaterThan(3 * 86_400 - 60);
    expect(Number(item?.ttl) - Date.now() / 1000).toBeLessThanOrEqual(3 * 86_400);
    expect(exampleDynamoHandlersFor({ ...config, notificationUrl: undefined })).toBe(exampleDynamoHandlers);
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
