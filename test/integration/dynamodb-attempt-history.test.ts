import { randomUUID } from 'node:crypto';
import { DeleteCommand, GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { ATTEMPT_HISTORY_LIMIT, type AttemptRecord } from '../../lambda/attempt-history.ts';
import { RetryableError, TerminalError } from '../../lambda/errors.ts';
import { defineDynamoHandler } from '../../lambda/stores/dynamodb/dynamo-handler.ts';
import { inboxKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import { NEVER_ATTEMPTED, NO_INBOX_ENTRY, NO_KEY } from '../../tools/ops/classify-failures.ts';
import { dlqPeek } from '../../tools/ops/dlq-peek.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { dynamoInboxShow } from '../../tools/ops/stores/dynamodb/dynamo-inbox-show.ts';
import { dynamoQuarantineList } from '../../tools/ops/stores/dynamodb/dynamo-quarantine-list.ts';
import { dynamoOpsStore } from '../../tools/ops/stores/dynamodb/index.ts';
import { createQueues, sendAll, startOpsSqs } from '../ops/ops-fixture.ts';
import { dynamoProcessor } from '../support/dynamo-processor.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { envelopeFactory, sqsRecordFactory } from '../support/sqs-event.ts';

const dynamo = useTestDynamoDb();
const { sqs } = await startOpsSqs();
let table: string;

/** Keys whose `Flaky` handler fails (retryable) until the test takes them out. */
const failingKeys = new Set<string>();
const flaky = defineDynamoHandler({
  messageType: 'Flaky',
  schemaVersion: 1,
  payload: z.object({ key: z.string() }),
  async handle({ payload }) {
    if (failingKeys.has(payload.key))
      throw new RetryableError('DOWNSTREAM_UNAVAILABLE', 'the downstream answered 503');
    return { writes: [] };
  },
});
/** `FailsWith`: terminal with the code its payload names. */
const failsWith = defineDynamoHandler({
  messageType: 'FailsWith',
  schemaVersion: 1,
  payload: z.object({ code: z.string() }),
  async handle({ payload }) {
    throw new TerminalError(payload.code, 'the case cannot take this change');
  },
});
const handlers = [flaky, failsWith];
const processor = (workerVersion: string, consumer = 'case-worker') =>
  dynamoProcessor(dynamo, table, handlers, { workerVersion, consumer });

beforeAll(async () => {
  table = await dynamo.createTable('attempts');
});

const inboxItem = async (key: string, consumer = 'case-worker') =>
  (
    await dynamo.doc.send(
      new GetCommand({ TableName: table, Key: inboxKey(consumer, key), ConsistentRead: true }),
    )
  ).Item;
const withoutTimes = (history: readonly AttemptRecord[]) => history.map(({ at: _at, ...rest }) => rest);
const flakyEnvelope = (key: string, maxBusinessAttempts = 5) =>
  envelopeFactory({
    messageType: 'Flaky',
    idempotencyKey: key,
    attemptPolicy: { maxBusinessAttempts },
    payload: { key },
  });

describe('Attempt history on the DynamoDB store', () => {
  it('keeps the version that first saw a key and one entry per attempt, the completion included', async () => {
    // Prepare
    const key = `flaky:${randomUUID()}`;
    failingKeys.add(key);
    const body = JSON.stringify(flakyEnvelope(key));
    const deliver = (version: string, receiveCount: number) =>
      processor(version)(sqsRecordFactory(body, { messageId: `${version}-${key}`, receiveCount }));

    // Act
    const outcomes = [await deliver('deploy-1', 1), await deliver('deploy-2', 2)];
    failingKeys.delete(key);
    outcomes.push(await deliver('deploy-3', 3));

    // Assess
    expect(outcomes.map((o) => o.result)).toEqual(['RETRYABLE_FAILURE', 'RETRYABLE_FAILURE', 'COMPLETED']);
    const item = await inboxItem(key);
    expect(item?.status).toBe('COMPLETED');
    expect(item?.firstVersion).toBe('deploy-1');
    expect(withoutTimes(item?.attemptHistory)).toEqual([
      {
        outcome: 'FAILED_RETRYABLE',
        code: 'DOWNSTREAM_UNAVAILABLE',
        version: 'deploy-1',
        messageId: `deploy-1-${key}`,
        attempt: 1,
        receiveCount: 1,
      },
      {
        outcome: 'FAILED_RETRYABLE',
        code: 'DOWNSTREAM_UNAVAILABLE',
        version: 'deploy-2',
        messageId: `deploy-2-${key}`,
        attempt: 2,
        receiveCount: 2,
      },
      {
        outcome: 'COMPLETED',
        version: 'deploy-3',
        messageId: `deploy-3-${key}`,
        attempt: 3,
        receiveCount: 3,
      },
    ]);
  });

  it(`keeps the last ${ATTEMPT_HISTORY_LIMIT} attempts of a key that failed 25 times, and inbox show renders them`, async () => {
    // Prepare
    const key = `flaky:${randomUUID()}`;
    failingKeys.add(key);
    const body = JSON.stringify(flakyEnvelope(key, 100));
    const version = (n: number) => `deploy-${String(n).padStart(2, '0')}`;

    // Act: 25 deliveries, each by another deploy
    for (let n = 1; n <= 25; n += 1) await processor(version(n))(sqsRecordFactory(body, { receiveCount: n }));
    const out = createMemoryOutput();
    const shown = await dynamoInboxShow(
      { dynamo: { doc: dynamo.doc, tableName: table }, out },
      { consumer: 'case-worker', idempotencyKey: key },
    );

    // Assess
    const item = await inboxItem(key);
    expect(item?.attempts).toBe(25);
    expect(item?.firstVersion).toBe(version(1));
    const history = item?.attemptHistory as AttemptRecord[];
    expect(history).toHaveLength(ATTEMPT_HISTORY_LIMIT);
    expect(history.map((a) => a.attempt)).toEqual(Array.from({ length: 20 }, (_, i) => i + 6));
    expect(history.map((a) => a.version)).toEqual(Array.from({ length: 20 }, (_, i) => version(i + 6)));
    expect(shown.inbox?.firstVersion).toBe(version(1));
    const text = out.stdout();
    expect(text).toContain(`Attempts (the last ${ATTEMPT_HISTORY_LIMIT} are kept; oldest first):`);
    expect(text).toContain(version(25));
    expect(text).toContain(version(6));
    expect(
      text.split('\n').filter((line) => line.includes('DOWNSTREAM_UNAVAILABLE') && line.includes('deploy-')),
    ).toHaveLength(20);
    expect(text).not.toContain(version(5));
  });

  it('counts DLQ messages and quarantine items by failure code and the version that first saw each key', async () => {
    // Prepare: as on PostgreSQL
    const consumer = `classify-${randomUUID().slice(0, 8)}`;
    const terminal = (code: string) =>
      envelopeFactory({
        messageType: 'FailsWith',
        idempotencyKey: `fails:${randomUUID()}`,
        payload: { code },
      });
    const v1 = [terminal('CASE_NOT_FOUND'), terminal('CASE_NOT_FOUND')];
    const v2 = [terminal('CASE_NOT_FOUND'), terminal('STAGE_REGRESSION')];
    const unseen = envelopeFactory();
    const garbage = 'not json {';
    for (const envelope of v1) await processor('deploy-1', consumer)(sqsRecordFactory(envelope));
    for (const body of [...v2, garbage]) await processor('deploy-2', consumer)(sqsRecordFactory(body));
    const { dlqUrl } = await createQueues(sqs);
    await sendAll(sqs, dlqUrl, [...v1, ...v2, unseen, garbage]);
    const target = { doc: dynamo.doc, tableName: table };
    const store = dynamoOpsStore({ target: () => target });
    const peekOut = createMemoryOutput();
    const listOut = createMemoryOutput();

    // Act
    const peeked = await dlqPeek(
      { store, sqs, out: peekOut },
      { dlqUrl, consumer, max: 10, waitSeconds: 0, group: true },
    );
    const listed = await dynamoQuarantineList(
      { dynamo: target, out: listOut },
      { consumer, limit: 1, group: true },
    );

    // Assess
    const keysOf = (envelopes: typeof v1) => expect.arrayContaining(envelopes.map((e) => e.idempotencyKey));
    expect(peeked.classes).toEqual([
      { code: 'CASE_NOT_FOUND', firstVersion: 'deploy-1', count: 2, sampleKeys: keysOf(v1) },
      { code: 'CASE_NOT_FOUND', firstVersion: 'deploy-2', count: 1, sampleKeys: [v2[0]?.idempotencyKey] },
      { code: 'INVALID_ENVELOPE', firstVersion: NO_KEY, count: 1, sampleKeys: [] },
      { code: 'NO_INBOX_ROW', firstVersion: NEVER_ATTEMPTED, count: 1, sampleKeys: [unseen.idempotencyKey] },
      { code: 'STAGE_REGRESSION', firstVersion: 'deploy-2', count: 1, sampleKeys: [v2[1]?.idempotencyKey] },
    ]);
    expect(peekOut.stdout()).toContain('By failure code and first-seen version:');
    expect(listed.entries).toHaveLength(1);
    expect(listed.classes).toEqual([
      { code: 'CASE_NOT_FOUND', firstVersion: 'deploy-1', count: 2, sampleKeys: keysOf(v1) },
      { code: 'CASE_NOT_FOUND', firstVersion: 'deploy-2', count: 1, sampleKeys: [v2[0]?.idempotencyKey] },
      { code: 'INVALID_JSON', firstVersion: NO_KEY, count: 1, sampleKeys: [] },
      { code: 'STAGE_REGRESSION', firstVersion: 'deploy-2', count: 1, sampleKeys: [v2[1]?.idempotencyKey] },
    ]);
    expect(listed.entries[0]).toMatchObject({ workerVersion: 'deploy-2', firstVersion: null }); // the newest: garbage
    expect(listOut.stdout()).toContain('By reason code and first-seen version (every matching entry):');
    const quarantined = (
      (await dynamo.doc.send(new ScanCommand({ TableName: table, ConsistentRead: true }))).Items ?? []
    ).filter((item) => String(item.PK).startsWith('QUARANTINE#') && item.SK === `WORKER#${consumer}`);
    expect(
      Object.fromEntries(quarantined.map((q) => [q.idempotencyKey ?? '(none)', q.workerVersion])),
    ).toEqual({
      [v1[0]?.idempotencyKey as string]: 'deploy-1',
      [v1[1]?.idempotencyKey as string]: 'deploy-1',
      [v2[0]?.idempotencyKey as string]: 'deploy-2',
      [v2[1]?.idempotencyKey as string]: 'deploy-2',
      '(none)': 'deploy-2',
    });
    // A quarantined key whose inbox item is gone (TTL) is a class of its own
    await dynamo.doc.send(
      new DeleteCommand({ TableName: table, Key: inboxKey(consumer, v2[1]?.idempotencyKey as string) }),
    );
    const after = await dynamoQuarantineList(
      { dynamo: target, out: createMemoryOutput() },
      { consumer, group: true },
    );
    expect(after.classes).toContainEqual({
      code: 'STAGE_REGRESSION',
      firstVersion: NO_INBOX_ENTRY,
      count: 1,
      sampleKeys: [v2[1]?.idempotencyKey],
    });
  });
});
