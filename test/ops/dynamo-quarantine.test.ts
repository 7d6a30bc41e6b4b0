import { createHash, randomUUID } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { exampleDynamoHandlers } from '../../lambda/domain/dynamodb/index.ts';
import { quarantineKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import { dynamoQuarantineList } from '../../tools/ops/dynamo-quarantine-list.ts';
import { dynamoQuarantineShow } from '../../tools/ops/dynamo-quarantine-show.ts';
import { OperationError } from '../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { dynamoProcessor } from '../support/dynamo-processor.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { runEntry } from '../support/run-entry.ts';
import { caseStageEnvelope, envelopeFactory, sqsRecordFactory } from '../support/sqs-event.ts';

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
  const caseId = `CASE-${randomUUID()}`;
  const deadline = deadlineFor(caseId);
  const deadlineBody = JSON.stringify(deadline);
  await process(
    sqsRecordFactory(deadlineBody, {
      messageAttributes: {
        tenant: { stringValue: 'acme', stringListValues: [], binaryListValues: [], dataType: 'String' },
      },
    }),
  );
  const otherBody = JSON.stringify(deadlineFor(`CASE-${randomUUID()}`));
  const otherOutcome = await other(sqsRecordFactory(otherBody));
  return { table, garbage, caseId, deadline, deadlineBody, otherBody, otherOutcome, process };
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

describe('Function: dynamoQuarantineShow()', () => {
  let fixture: Awaited<ReturnType<typeof quarantinedTable>>;
  beforeAll(async () => {
    fixture = await quarantinedTable();
  });
  const target = () => ({ doc: dynamo.doc, tableName: fixture.table });
  const show = (quarantineId: string, consumer = 'case-worker', out = createMemoryOutput()) =>
    dynamoQuarantineShow({ dynamo: target(), out }, { consumer, quarantineId });

  it('shows the item with its body, attributes, reason and aggregate', async () => {
    // Prepare
    const out = createMemoryOutput();
    const id = hashOf(fixture.deadlineBody);

    // Act
    const result = await show(id, 'case-worker', out);

    // Assess
    expect(result).toMatchObject({
      quarantineId: id,
      consumer: 'case-worker',
      body: fixture.deadlineBody,
      bodyTruncated: false,
      idempotencyKey: fixture.deadline.idempotencyKey,
      messageType: 'CaseDeadlineCalculationRequested',
      reasonCode: 'CASE_NOT_FOUND',
      messageAttributes: { tenant: { stringValue: 'acme', dataType: 'String' } },
      occurrences: 1,
      releasedAt: null,
      releaseClaim: null,
      aggregateType: 'case',
      aggregateId: fixture.caseId,
      newerCompletedEvents: 0,
    });
    expect(result.sqsAttributes).toMatchObject({ ApproximateReceiveCount: '1' });
    expect(out.stdout()).toContain('Body (contains payload values):');
    expect(out.stdout()).toContain('"stage": "REVIEW"');
    expect(out.stdout()).toContain(`of case "${fixture.caseId}" (matched by id`);
  });

  it('takes a unique prefix of the body hash, as inbox show prints it', async () => {
    const result = await show(hashOf(fixture.garbage).slice(0, 12));
    expect(result).toMatchObject({ reasonCode: 'INVALID_JSON', body: fixture.garbage, aggregateId: null });
    expect(result.newerCompletedEvents).toBeNull();
  });

  it('counts the events of the aggregate completed after the message was first seen', async () => {
    // Prepare: the case is created afterwards (its CaseStageChanged completes)
    const own = await quarantinedTable();
    await own.process(sqsRecordFactory(caseStageEnvelope(own.caseId, 1)));
    await own.process(sqsRecordFactory(caseStageEnvelope(`CASE-${randomUUID()}`, 1))); // another case
    const out = createMemoryOutput();

    // Act
    const result = await dynamoQuarantineShow(
      { dynamo: { doc: dynamo.doc, tableName: own.table }, out },
      { consumer: 'case-worker', quarantineId: hashOf(own.deadlineBody) },
    );

    // Assess
    expect(result.newerCompletedEvents).toBe(1);
    expect(out.stdout()).toMatch(
      /: 1\. "quarantine release [0-9a-f]{64} --store dynamodb" lists them and refuses/,
    );
  });

  it('names the id, the consumer that has it and the fix when the consumer has no such item (exit 1)', async () => {
    // Prepare: the other consumer's item
    expect(fixture.otherOutcome).toMatchObject({ result: 'TERMINAL_FAILURE', acknowledged: true });
    const othersHash = hashOf(fixture.otherBody);

    // Act
    const error = await show(othersHash).catch((caught: unknown) => caught);
    const unknown = await show('0123456789abcdef').catch((caught: unknown) => caught);
    const malformed = await show('42').catch((caught: unknown) => caught);

    // Assess
    expect(error).toBeInstanceOf(OperationError);
    expect((error as OperationError).exitCode).toBe(1);
    expect((error as Error).message).toContain(
      `No quarantine item "${othersHash}" for consumer "case-worker"`,
    );
    expect((error as Error).message).toContain('quarantined for consumer "other-worker": pass --consumer');
    expect((unknown as Error).message).toMatch(
      /No quarantine item "0123456789abcdef".*"sqs-worker quarantine list --all --store dynamodb"/,
    );
    expect((malformed as Error).message).toContain('must be the body hash');
    expect((malformed as Error).message).toContain('(given "42")');
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

  it('shows an item with its body by the prefix of its hash (exit 0)', async () => {
    const { code, stdout } = await runEntry(
      'bin/sqs-worker.js',
      ['quarantine', 'show', hashOf(fixture.deadlineBody).slice(0, 12), '--store', 'dynamodb'],
      env(),
    );
    expect(code).toBe(0);
    expect(stdout).toContain(hashOf(fixture.deadlineBody));
    expect(stdout).toContain('"stage": "REVIEW"');
  });
});
