import { createHash, randomUUID } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { exampleDynamoHandlers } from '../../lambda/domain/dynamodb/index.ts';
import { quarantineKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import { dynamoQuarantineList } from '../../tools/ops/dynamo-quarantine-list.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { dynamoProcessor } from '../support/dynamo-processor.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { runEntry } from '../support/run-entry.ts';
import { envelopeFactory, sqsRecordFactory } from '../support/sqs-event.ts';

const dynamo = useTestDynamoDb();
const hashOf = (body: string) => createHash('sha256').update(body).digest('hex');

/**
 * A deadline request of a case that does not exist: the example handler fails it with CASE_NOT_FOUND, terminal at
 * once (one business attempt), so the store quarantines it.
 */
const deadlineFor = (caseId: string) =>
  envelopeFactory({
    messageType: 'CaseDeadlineCalculationRequested',
    idempotencyKey: `case:${caseId}:deadline`,
    aggregateType: 'case',
    aggregateId: caseId,
    payload: { caseId, stage: 'REVIEW', effectiveAt: '2026-07-06T10:00:00Z' },
    attemptPolicy: { maxBusinessAttempts: 1, notBefore: null },
  });

/**
 * A table whose quarantine items the store itself wrote (the engine's record processor): an undecodable body, a deadline request whose case is missing, and the same
 * for another consumer.
 */
async function quarantinedTable() {
  const table = await dynamo.createTable('quarantine');
  const process = dynamoProcessor(dynamo, table, exampleDynamoHandlers);
  const other = dynamoProcessor(dynamo, table, exampleDynamoHandlers, { consumer: 'other-worker' });
  const garbage = `not json ${randomUUID()}`;
  await process(sqsRecordFactory(garbage));
  const deadline = deadlineFor(`CASE-${randomUUID()}`);
  const deadlineBody = JSON.stringify(deadline);
  await process(sqsRecordFactory(deadlineBody));
  await other(sqsRecordFactory(JSON.stringify(deadlineFor(`CASE-${randomUUID()}`))));
  return { table, garbage, deadline, deadlineBody, process };
}

describe('Function: dynamoQuarantineList()', () => {
  let fixture: Awaited<ReturnType<typeof quarantinedTable>>;
  beforeAll(async () => {
    fixture = await quarantinedTable();
  });
  const target = () => ({ doc: dynamo.doc, tableName: fixture.table });

  it('lists the unreleased items of the consumer newest first, by body hash, without bodies', async () => {
    // Prepare
    const out = createMemoryOutput();

    // Act
    const result = await dynamoQuarantineList({ dynamo: target(), out }, { consumer: 'case-worker' });

    // Assess
    expect(result.entries.map((e) => e.quarantineId)).toEqual([
      hashOf(fixture.deadlineBody),
      hashOf(fixture.garbage),
    ]);
    expect(result.entries[0]).toMatchObject({
      messageType: 'CaseDeadlineCalculationRequested',
      idempotencyKey: fixture.deadline.idempotencyKey,
      reasonCode: 'CASE_NOT_FOUND',
      occurrences: 1,
      releasedAt: null,
    });
    expect(result.entries[1]).toMatchObject({ reasonCode: 'INVALID_JSON', idempotencyKey: null });
    expect(result.byReason).toEqual({ CASE_NOT_FOUND: 1, INVALID_JSON: 1 });
    expect(out.stdout()).toContain(hashOf(fixture.deadlineBody));
    expect(out.stdout()).not.toContain('REVIEW'); // a payload value
    expect(out.stdout()).not.toContain('not json'); // the other body
    expect(JSON.stringify(result)).not.toContain('REVIEW');
  });

  it('filters by reason and limits the count', async () => {
    const byReason = await dynamoQuarantineList(
      { dynamo: target(), out: createMemoryOutput() },
      { consumer: 'case-worker', reasonCode: 'INVALID_JSON' },
    );
    expect(byReason.entries.map((e) => e.quarantineId)).toEqual([hashOf(fixture.garbage)]);
    const limited = await dynamoQuarantineList(
      { dynamo: target(), out: createMemoryOutput() },
      { consumer: 'case-worker', limit: 1 },
    );
    expect(limited.entries.map((e) => e.quarantineId)).toEqual([hashOf(fixture.deadlineBody)]);
  });

  it('leaves released items out unless includeReleased', async () => {
    // Prepare: a table of its own, one item marked released as a release marks it
    const own = await quarantinedTable();
    await dynamo.doc.send(
      new UpdateCommand({
        TableName: own.table,
        Key: quarantineKey('case-worker', hashOf(own.garbage)),
        UpdateExpression: 'SET releasedAt = :at, releasedMessageId = :id',
        ExpressionAttributeValues: { ':at': new Date().toISOString(), ':id': 'm-released' },
      }),
    );
    const ownTarget = { doc: dynamo.doc, tableName: own.table };

    // Act
    const open = await dynamoQuarantineList(
      { dynamo: ownTarget, out: createMemoryOutput() },
      { consumer: 'case-worker' },
    );
    const all = await dynamoQuarantineList(
      { dynamo: ownTarget, out: createMemoryOutput() },
      { consumer: 'case-worker', includeReleased: true },
    );

    // Assess
    expect(open.entries.map((e) => e.quarantineId)).toEqual([hashOf(own.deadlineBody)]);
    expect(all.entries).toHaveLength(2);
    expect(all.entries.find((e) => e.quarantineId === hashOf(own.garbage))).toMatchObject({
      releasedMessageId: 'm-released',
    });
    expect(all.entries.find((e) => e.quarantineId === hashOf(own.garbage))?.releasedAt).toBeInstanceOf(Date);
  });

  it('says so when the consumer has none', async () => {
    const out = createMemoryOutput();
    const result = await dynamoQuarantineList({ dynamo: target(), out }, { consumer: 'nobody' });
    expect(result.entries).toEqual([]);
    expect(out.stdout()).toContain('No unreleased quarantine entries for consumer nobody.');
  });
});

describe('CLI: sqs-worker quarantine --store dynamodb', () => {
  let fixture: Awaited<ReturnType<typeof quarantinedTable>>;
  beforeAll(async () => {
    fixture = await quarantinedTable();
  });
  const env = () => ({
    DYNAMODB_TABLE: fixture.table,
    DYNAMODB_ENDPOINT: dynamo.endpoint,
    AWS_REGION: 'us-east-1',
  });

  it('lists the table with --store dynamodb, no database URL needed (exit 0)', async () => {
    const { code, stdout } = await runEntry(
      'bin/sqs-worker.js',
      ['quarantine', 'list', '--store', 'dynamodb', '--reason', 'CASE_NOT_FOUND', '--json'],
      env(),
    );
    expect(code).toBe(0);
    expect(JSON.parse(stdout).entries.map((e: { quarantineId: string }) => e.quarantineId)).toEqual([
      hashOf(fixture.deadlineBody),
    ]);
  });
});
