import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { canaryDynamoHandler } from '../../lambda/canary/canary-dynamo-handler.ts';
import { canaryHandler } from '../../lambda/canary/canary-handler.ts';
import { CANARY_MESSAGE_TYPE, type CanaryMode, canaryKey } from '../../lambda/canary/canary-message.ts';
import { withCanaryHandler } from '../../lambda/canary/with-canary-handler.ts';
import { exampleDynamoHandlers } from '../../lambda/domain/dynamodb/index.ts';
import { paymentCaptured } from '../../lambda/domain/index.ts';
import { RetryableError } from '../../lambda/errors.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import { createDynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import { inboxKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import { defineHandler, type MessageHandler } from '../../lambda/stores/postgres/message-handler.ts';
import { canary } from '../../tools/ops/send-canary.ts';
import { createTestDatabase } from '../support/database.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';

const db = await createTestDatabase();
const dynamo = useTestDynamoDb();
const quiet = {
  logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
  metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
};

/** The three canaries of a run, as `sqs-worker smoke` sends them. */
const canaries = (runId: string) =>
  (['apply', 'poison', 'retry'] as CanaryMode[]).map((mode) => canary(runId, mode, new Date()));

/** Counts of the example domain's tables: the canary must leave them as they were. */
const domainRows = async () => {
  const [row] = await db.sql<{ ledger: number; cases: number; deadlines: number }[]>`
    select (select count(*) from ledger_entries)::int as ledger, (select count(*) from cases)::int as cases,
           (select count(*) from case_deadlines)::int as deadlines
  `;
  return row;
};

describe('Function: withCanaryHandler() — the toolkit registers its canary in every worker', () => {
  it('adds the canary of the store to a list of your own, and leaves a list that defines its type as it is', () => {
    // Prepare
    const own = defineHandler({
      messageType: CANARY_MESSAGE_TYPE,
      schemaVersion: 1,
      payload: z.object({}),
      async handle() {
        return {};
      },
    });

    // Act
    const postgres = withCanaryHandler([paymentCaptured as MessageHandler], canaryHandler);
    const dynamodb = withCanaryHandler(exampleDynamoHandlers, canaryDynamoHandler);
    const defined = withCanaryHandler(
      [paymentCaptured as MessageHandler, own as MessageHandler],
      canaryHandler,
    );

    // Assess
    expect(postgres.map((h) => h.messageType)).toEqual(['PaymentCaptured', CANARY_MESSAGE_TYPE]);
    expect(postgres.at(-1)).toBe(canaryHandler);
    expect((dynamodb.at(-1) as { store?: string }).store).toBe('dynamodb');
    expect(defined).toEqual([paymentCaptured, own]);
    expect(withCanaryHandler([], canaryHandler)).toEqual([]);
  });
});

describe('The canary handler on PostgreSQL (a worker of your own handler list)', () => {
  it('applies, quarantines and retries the canaries by their mode, writing nothing to the domain', async () => {
    // Prepare: a worker that lists one handler of its own, and no canary.
    const sql = db.client({ max: 2 });
    const worker = createWorker({ consumer: 'case-worker', handlers: [paymentCaptured], sql, ...quiet });
    const before = await domainRows();
    const [apply, poison, retry] = canaries('t1') as [
      ReturnType<typeof canary>,
      ReturnType<typeof canary>,
      ReturnType<typeof canary>,
    ];
    const records = [apply, poison, retry].map((c) => sqsRecordFactory(c.body));

    // Act
    const response = await worker(sqsEvent(records), lambdaContext());

    // Assess: the retry canary is reported, the others acknowledged; the inbox says why.
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: records[2]?.messageId }]);
    const rows = await db.sql`
      select idempotency_key, status, failure_code, result_ref from worker_inbox
       where idempotency_key like 'canary:t1:%' order by idempotency_key
    `;
    expect(rows).toEqual([
      {
        idempotency_key: canaryKey('t1', 'apply'),
        status: 'COMPLETED',
        failure_code: null,
        result_ref: 'canary:t1',
      },
      {
        idempotency_key: canaryKey('t1', 'poison'),
        status: 'FAILED_TERMINAL',
        failure_code: 'CANARY_POISON',
        result_ref: null,
      },
      {
        idempotency_key: canaryKey('t1', 'retry'),
        status: 'FAILED_RETRYABLE',
        failure_code: 'CANARY_RETRYABLE',
        result_ref: null,
      },
    ]);
    const quarantined = await db.sql`
      select idempotency_key, reason_code from worker_quarantine where idempotency_key like 'canary:t1:%'
    `;
    expect(quarantined).toEqual([
      { idempotency_key: canaryKey('t1', 'poison'), reason_code: 'CANARY_POISON' },
    ]);
    expect(await domainRows()).toEqual(before);
  });

  it('uses your own handler of the canary type instead of the toolkit one', async () => {
    // Prepare
    const sql = db.client({ max: 2 });
    const own = defineHandler({
      messageType: CANARY_MESSAGE_TYPE,
      schemaVersion: 1,
      payload: z.object({ runId: z.string() }),
      async handle() {
        throw new RetryableError('MY_CANARY', 'my own canary handler');
      },
    });
    const worker = createWorker({ consumer: 'case-worker', handlers: [paymentCaptured, own], sql, ...quiet });
    const [apply] = canaries('t2');

    // Act: the whole batch fails retryably, so the invocation fails (Lambda backs off).
    await expect(worker(sqsEvent([sqsRecordFactory(apply?.body)]), lambdaContext())).rejects.toThrow(
      /MY_CANARY/,
    );

    // Assess
    const [row] =
      await db.sql`select status, failure_code from worker_inbox where idempotency_key = ${canaryKey('t2', 'apply')}`;
    expect(row).toEqual({ status: 'FAILED_RETRYABLE', failure_code: 'MY_CANARY' });
  });
});

describe('The canary handler on DynamoDB', () => {
  it('completes the apply canary with only its inbox item, and quarantines the poison canary', async () => {
    // Prepare
    const table = await dynamo.createTable('canary');
    const worker = createWorker({
      consumer: 'case-worker',
      handlers: exampleDynamoHandlers,
      store: createDynamoStore({ client: dynamo.newClient(), tableName: table }),
      ...quiet,
    });
    const [apply, poison] = canaries('t3') as [ReturnType<typeof canary>, ReturnType<typeof canary>];

    // Act
    const response = await worker(
      sqsEvent([sqsRecordFactory(apply.body), sqsRecordFactory(poison.body)]),
      lambdaContext(),
    );

    // Assess: two inbox items and one quarantine item, nothing else in the table.
    expect(response.batchItemFailures).toEqual([]);
    const applied = await dynamo.doc.send(
      new GetCommand({ TableName: table, Key: inboxKey('case-worker', apply.key), ConsistentRead: true }),
    );
    expect(applied.Item).toMatchObject({ status: 'COMPLETED', resultRef: 'canary:t3', attempts: 1 });
    const { Items = [] } = await dynamo.doc.send(new ScanCommand({ TableName: table, ConsistentRead: true }));
    expect(Items.map((item) => String(item.PK).split('#')[0]).sort()).toEqual([
      'IDEMP',
      'IDEMP',
      'QUARANTINE',
    ]);
    expect(Items.find((item) => String(item.PK).startsWith('QUARANTINE#'))).toMatchObject({
      reasonCode: 'CANARY_POISON',
      idempotencyKey: poison.key,
    });
  });
});
