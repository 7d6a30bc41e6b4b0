import { createHash, randomUUID } from 'node:crypto';
import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { exampleDynamoHandlers } from '../../../../lambda/domain/dynamodb/index.ts';
import { inboxKey, quarantineKey } from '../../../../lambda/stores/dynamodb/item-keys.ts';
import { OperationError, OutOfOrderReleaseError } from '../../../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../../../tools/ops/memory-output.ts';
import { dynamoInboxStats } from '../../../../tools/ops/stores/dynamodb/dynamo-inbox-stats.ts';
import { dynamoQuarantineList } from '../../../../tools/ops/stores/dynamodb/dynamo-quarantine-list.ts';
import { dynamoQuarantineRelease } from '../../../../tools/ops/stores/dynamodb/dynamo-quarantine-release.ts';
import { dynamoQuarantineShow } from '../../../../tools/ops/stores/dynamodb/dynamo-quarantine-show.ts';
import { dynamoProcessor } from '../../../support/dynamo-processor.ts';
import { useTestDynamoDb } from '../../../support/dynamodb.ts';
import { runEntry } from '../../../support/run-entry.ts';
import { caseStageEnvelope, envelopeFactory, sqsRecordFactory } from '../../../support/sqs-event.ts';
import { createQueues, deadlineFor, depth, startOpsSqs } from '../../ops-fixture.ts';

const dynamo = useTestDynamoDb();
const { sqs, endpoint: sqsEndpoint } = await startOpsSqs();
const hashOf = (body: string) => createHash('sha256').update(body).digest('hex');

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
    expect(out.stdout()).toContain(`of case "${fixture.caseId}" completed after this message was first seen`);
  });

  it('takes a unique prefix of the body hash, as inbox show prints it', async () => {
    const result = await show(hashOf(fixture.garbage).slice(0, 12));
    expect(result).toMatchObject({ reasonCode: 'INVALID_JSON', body: fixture.garbage, aggregateId: null });
    expect(result.newerCompletedEvents).toBeNull();
  });

  it('counts the events of the aggregate completed after the message was first seen, of its type only', async () => {
    // Prepare: the case is created afterwards (its CaseStageChanged completes); another case, and a payment whose
    // aggregate id is the case's (another aggregate type), complete too.
    const own = await quarantinedTable();
    await own.process(sqsRecordFactory(caseStageEnvelope(own.caseId, 1)));
    await own.process(sqsRecordFactory(caseStageEnvelope(`CASE-${randomUUID()}`, 1))); // another case
    const paymentId = `PAY-${randomUUID()}`;
    const payment = await own.process(
      sqsRecordFactory(
        envelopeFactory({
          idempotencyKey: `payment:${paymentId}:captured`,
          aggregateType: 'payment',
          aggregateId: own.caseId,
          payload: { paymentId, accountId: 'ACC-1', amount: '1.00', currency: 'EUR' },
        }),
      ),
    );
    expect(payment.result).toBe('COMPLETED');
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

/** The item as stored now (consistent read). */
async function itemOf(table: string, key: { PK: string; SK: string }) {
  const { Item } = await dynamo.doc.send(
    new GetCommand({ TableName: table, Key: key, ConsistentRead: true }),
  );
  return Item;
}

describe('Function: dynamoQuarantineRelease()', () => {
  const release = (
    fixture: { table: string },
    quarantineId: string,
    queueUrl: string,
    extra: { force?: boolean; out?: ReturnType<typeof createMemoryOutput> } = {},
  ) =>
    dynamoQuarantineRelease(
      { dynamo: { doc: dynamo.doc, tableName: fixture.table }, sqs, out: extra.out ?? createMemoryOutput() },
      { quarantineId, queueUrl, consumer: 'case-worker', actor: 'test-operator', force: extra.force },
    );

  /** The item is open and unclaimed, its inbox item as the failure left it, and nothing was sent. */
  async function expectNothingChanged(
    fixture: Awaited<ReturnType<typeof quarantinedTable>>,
    queueUrl: string,
  ) {
    const item = await itemOf(fixture.table, quarantineKey('case-worker', hashOf(fixture.deadlineBody)));
    expect(item).not.toHaveProperty('releasedAt');
    expect(item).not.toHaveProperty('releaseClaim');
    const inbox = await itemOf(fixture.table, inboxKey('case-worker', fixture.deadline.idempotencyKey));
    expect(inbox).toMatchObject({ status: 'FAILED_TERMINAL', attempts: 1, failureCode: 'CASE_NOT_FOUND' });
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 0, inFlight: 0 });
  }

  it('re-sends the body with its attributes, re-arms the inbox item, marks the item released with an audit item', async () => {
    // Prepare: the case now exists (created through another consumer, so no newer event of this consumer)
    const fixture = await quarantinedTable();
    const creator = dynamoProcessor(dynamo, fixture.table, exampleDynamoHandlers, { consumer: 'case-admin' });
    expect(await creator(sqsRecordFactory(caseStageEnvelope(fixture.caseId, 1)))).toMatchObject({
      result: 'COMPLETED',
    });
    const { queueUrl } = await createQueues(sqs);
    const id = hashOf(fixture.deadlineBody);
    const out = createMemoryOutput();

    // Act
    const result = await release(fixture, id, queueUrl, { out });

    // Assess: the message, the item, the inbox item, the audit item
    const received = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MessageAttributeNames: ['All'], WaitTimeSeconds: 1 }),
    );
    const [message] = received.Messages ?? [];
    expect(message?.Body).toBe(fixture.deadlineBody);
    expect(message?.MessageAttributes?.tenant?.StringValue).toBe('acme');
    expect(result).toMatchObject({
      quarantineId: id,
      releasedMessageId: message?.MessageId,
      inboxStatusBefore: 'FAILED_TERMINAL',
      inboxRearmed: true,
      newerCompletedEvents: 0,
      forced: false,
    });
    const item = await itemOf(fixture.table, quarantineKey('case-worker', id));
    expect(item).toMatchObject({ releasedMessageId: message?.MessageId, releasedBy: 'test-operator' });
    expect(Date.parse(String(item?.releasedAt))).not.toBeNaN();
    expect(item).not.toHaveProperty('releaseClaim');
    const inbox = await itemOf(fixture.table, inboxKey('case-worker', fixture.deadline.idempotencyKey));
    expect(inbox).toMatchObject({ status: 'FAILED_RETRYABLE', attempts: 0 });
    const audit = await itemOf(fixture.table, { PK: `AUDIT#${result.auditId}`, SK: 'WORKER#case-worker' });
    expect(audit).toMatchObject({
      action: 'quarantine_release',
      outcome: 'DONE',
      actor: 'test-operator',
      targetQueue: queueUrl,
      newMessageId: message?.MessageId,
      idempotencyKey: fixture.deadline.idempotencyKey,
      detail: { quarantineId: id, inboxStatusBefore: 'FAILED_TERMINAL', inboxRearmed: true, forced: false },
    });
    expect(JSON.stringify(audit)).not.toContain('REVIEW'); // no payload in the audit
    expect(out.stdout()).toContain(`as message ${message?.MessageId}`);
    expect(
      await dynamoQuarantineList(
        { dynamo: { doc: dynamo.doc, tableName: fixture.table }, out: createMemoryOutput() },
        { consumer: 'case-worker' },
      ).then((r) => r.entries.map((e) => e.quarantineId)),
    ).not.toContain(id);

    // Act: the worker receives the released message, with a fresh attempt budget
    const outcome = await fixture.process(
      sqsRecordFactory(message?.Body, { messageId: message?.MessageId ?? 'm' }),
    );

    // Assess
    expect(outcome).toMatchObject({ result: 'COMPLETED', attempts: 1 });
    const stats = await dynamoInboxStats(
      {
        dynamo: { doc: dynamo.doc, tableName: fixture.table },
        out: createMemoryOutput(),
        clock: { now: () => new Date(), sleep: async () => {} },
      },
      { consumer: 'case-worker' },
    );
    expect(stats.byStatus).toEqual({ PROCESSING: 0, COMPLETED: 1, FAILED_RETRYABLE: 0, FAILED_TERMINAL: 0 });
    expect(stats.openQuarantine).toBe(1); // the undecodable body; the audit item is not counted
  });

  it('refuses to release an item twice and sends nothing the second time', async () => {
    const fixture = await quarantinedTable();
    const { queueUrl } = await createQueues(sqs);
    const id = hashOf(fixture.deadlineBody);
    const first = await release(fixture, id, queueUrl);

    const error = await release(fixture, id, queueUrl).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(OperationError);
    expect((error as Error).message).toContain(`was already released at`);
    expect((error as Error).message).toContain(`as message ${first.releasedMessageId}`);
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 1, inFlight: 0 });
  });

  it('lets one of two operators releasing at once send it, and refuses the other', async () => {
    const fixture = await quarantinedTable();
    const { queueUrl } = await createQueues(sqs);
    const id = hashOf(fixture.deadlineBody);

    const settled = await Promise.allSettled([
      release(fixture, id, queueUrl),
      release(fixture, id, queueUrl),
    ]);

    expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(1);
    const [refused] = settled.filter((s) => s.status === 'rejected');
    expect((refused as PromiseRejectedResult).reason).toBeInstanceOf(OperationError);
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 1, inFlight: 0 });
  });

  it('refuses without force when newer events of the aggregate completed, then releases with force, audited', async () => {
    // Prepare: the case's CaseStageChanged completed for this consumer after the request was quarantined
    const fixture = await quarantinedTable();
    const stage = caseStageEnvelope(fixture.caseId, 1);
    await fixture.process(sqsRecordFactory(stage));
    await fixture.process(sqsRecordFactory(caseStageEnvelope(`CASE-${randomUUID()}`, 1))); // another case
    const { queueUrl } = await createQueues(sqs);
    const id = hashOf(fixture.deadlineBody);

    // Act
    const error = await release(fixture, id, queueUrl).catch((caught: unknown) => caught);

    // Assess
    expect(error).toBeInstanceOf(OutOfOrderReleaseError);
    const refused = error as OutOfOrderReleaseError;
    expect(refused.exitCode).toBe(1);
    expect(refused.message).toContain(`1 newer event(s) of case "${fixture.caseId}"`);
    expect(refused.message).toContain(`CaseStageChanged (key ${stage.idempotencyKey}) completed at`);
    expect(refused.message).toContain('keep the aggregate id but not its type');
    expect(refused.message).toContain(`"sqs-worker quarantine release ${id} --store dynamodb --force"`);
    expect(refused.message).not.toContain('REVIEW');
    expect(refused.data).toMatchObject({ quarantineId: id, newerCompletedEvents: 1 });
    await expectNothingChanged(fixture, queueUrl);

    // Act: forced
    const forced = await release(fixture, id, queueUrl, { force: true });

    // Assess
    expect(forced).toMatchObject({ forced: true, newerCompletedEvents: 1, inboxRearmed: true });
    const audit = await itemOf(fixture.table, { PK: `AUDIT#${forced.auditId}`, SK: 'WORKER#case-worker' });
    expect(audit?.detail).toMatchObject({ forced: true, newerCompletedEvents: 1 });
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 1, inFlight: 0 });
  });

  it('undoes the claim and the inbox re-arm when the send fails: nothing sent, nothing changed', async () => {
    const fixture = await quarantinedTable();
    const { queueUrl } = await createQueues(sqs);

    // Act: a queue that does not exist makes the real SendMessage fail.
    const error = await release(fixture, hashOf(fixture.deadlineBody), `${queueUrl}-missing`).catch(
      (caught: unknown) => caught,
    );

    // Assess
    expect(error).toBeInstanceOf(OperationError);
    expect((error as Error).message).toContain(
      'Nothing was sent; the claim and the inbox re-arm were undone',
    );
    await expectNothingChanged(fixture, queueUrl);
  });

  it('refuses while another release holds the item, and takes over a claim that ran out', async () => {
    // Prepare: a claim of a live release
    const fixture = await quarantinedTable();
    const { queueUrl } = await createQueues(sqs);
    const id = hashOf(fixture.deadlineBody);
    const claim = (expiresAt: number) =>
      dynamo.doc.send(
        new UpdateCommand({
          TableName: fixture.table,
          Key: quarantineKey('case-worker', id),
          UpdateExpression: 'SET releaseClaim = :claim',
          ExpressionAttributeValues: {
            ':claim': {
              token: randomUUID(),
              actor: 'other-operator',
              at: new Date().toISOString(),
              expiresAt,
            },
          },
        }),
      );
    await claim(Date.now() + 60_000);

    // Act
    const error = await release(fixture, id, queueUrl).catch((caught: unknown) => caught);

    // Assess
    expect((error as Error).message).toContain(`is being released by other-operator since`);
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 0, inFlight: 0 });

    // Act: that release died; its claim ran out
    await claim(Date.now() - 1);
    const result = await release(fixture, id, queueUrl);

    // Assess
    expect(result.inboxRearmed).toBe(true);
    expect(await itemOf(fixture.table, quarantineKey('case-worker', id))).not.toHaveProperty('releaseClaim');
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 1, inFlight: 0 });
  });

  it('refuses a body the store cut at 300 KiB, and a FIFO queue without the group id, changing nothing', async () => {
    // Prepare
    const fixture = await quarantinedTable();
    const big = `${'x'.repeat(310 * 1024)} not json`;
    await fixture.process(sqsRecordFactory(big));
    const { queueUrl } = await createQueues(sqs);
    const fifo = await createQueues(sqs, { fifo: true });

    // Act
    const cut = await release(fixture, hashOf(big), queueUrl).catch((caught: unknown) => caught);
    const noGroup = await release(fixture, hashOf(fixture.deadlineBody), fifo.queueUrl).catch(
      (caught: unknown) => caught,
    );
    const shown = await dynamoQuarantineShow(
      { dynamo: { doc: dynamo.doc, tableName: fixture.table }, out: createMemoryOutput() },
      { consumer: 'case-worker', quarantineId: hashOf(big) },
    );

    // Assess
    expect((cut as Error).message).toContain('keeps only the first 300 KiB of its body');
    expect(shown.bodyTruncated).toBe(true);
    expect((noGroup as Error).message).toContain(
      `has no MessageGroupId but ${fifo.queueUrl} is a FIFO queue`,
    );
    expect(await depth(sqs, fifo.queueUrl)).toEqual({ visible: 0, inFlight: 0 });
    await expectNothingChanged(fixture, queueUrl);
  });

  it('refuses an item whose message attributes the store dropped to fit 400 KB, which show names; and says a FIFO group id was dropped', async () => {
    // Prepare: a 290 KiB body with a 150 KB message attribute, and one with a 150 KB MessageGroupId
    const fixture = await quarantinedTable();
    const attribute = (value: string) => ({
      stringValue: value,
      stringListValues: [],
      binaryListValues: [],
      dataType: 'String',
    });
    const big = `${'x'.repeat(290 * 1024)} not json ${randomUUID()}`;
    await fixture.process(
      sqsRecordFactory(big, {
        messageAttributes: { tenant: attribute('acme'), big: attribute('b'.repeat(150_000)) },
      }),
    );
    const grouped = `${'y'.repeat(290 * 1024)} not json ${randomUUID()}`;
    const record = sqsRecordFactory(grouped);
    await fixture.process({
      ...record,
      attributes: { ...record.attributes, MessageGroupId: 'g'.repeat(150_000) },
    });
    const { queueUrl } = await createQueues(sqs);
    const fifo = await createQueues(sqs, { fifo: true });
    const out = createMemoryOutput();

    // Act
    const dropped = await release(fixture, hashOf(big), queueUrl).catch((caught: unknown) => caught);
    const noGroup = await release(fixture, hashOf(grouped), fifo.queueUrl).catch((caught: unknown) => caught);
    const shown = await dynamoQuarantineShow(
      { dynamo: { doc: dynamo.doc, tableName: fixture.table }, out },
      { consumer: 'case-worker', quarantineId: hashOf(big) },
    );

    // Assess
    expect(dropped).toBeInstanceOf(OperationError);
    expect((dropped as Error).message).toContain('does not keep its message attributes big');
    expect((noGroup as Error).message).toContain(
      `has no MessageGroupId (the store did not keep it: the item would not have fit 400 KB) but ${fifo.queueUrl}`,
    );
    expect(shown).toMatchObject({
      body: big,
      bodyTruncated: false,
      messageAttributes: { tenant: attribute('acme') },
      messageAttributesDropped: ['big'],
      sqsAttributesDropped: [],
    });
    expect(out.stdout()).toContain(
      "Message attributes NOT kept by the store (the item would not fit DynamoDB's 400 KB with them): big.",
    );
    expect(out.stdout()).not.toContain('bbbb'); // the dropped value
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 0, inFlight: 0 });
    expect(await depth(sqs, fifo.queueUrl)).toEqual({ visible: 0, inFlight: 0 });
    expect(await itemOf(fixture.table, quarantineKey('case-worker', hashOf(big)))).not.toHaveProperty(
      'releaseClaim',
    );
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

  it("peeks the DLQ with --store dynamodb, each message joined with its key's inbox item (exit 0)", async () => {
    // Prepare
    const { dlqUrl } = await createQueues(sqs);
    await sqs.send(new SendMessageCommand({ QueueUrl: dlqUrl, MessageBody: fixture.deadlineBody }));
    const item = await itemOf(fixture.table, inboxKey('case-worker', fixture.deadline.idempotencyKey));

    // Act
    const { code, stdout } = await runEntry(
      'bin/sqs-worker.js',
      ['dlq', 'peek', '--store', 'dynamodb', '--json'],
      {
        ...env(),
        WORKER_DLQ_URL: dlqUrl,
        SQS_ENDPOINT: sqsEndpoint,
      },
    );

    // Assess
    expect(code).toBe(0);
    expect(item?.status).toEqual(expect.stringMatching(/^FAILED_/));
    expect(JSON.parse(stdout).messages).toEqual([
      expect.objectContaining({
        idempotencyKey: fixture.deadline.idempotencyKey,
        inboxStatus: item?.status,
        inboxAttempts: item?.attempts,
      }),
    ]);
  });

  it('releases with --store dynamodb, then refuses a second release (exit 0, then 1)', async () => {
    // Prepare
    const { queueUrl } = await createQueues(sqs);
    const id = hashOf(fixture.garbage);
    const releaseEnv = {
      ...env(),
      WORKER_QUEUE_URL: queueUrl,
      SQS_ENDPOINT: sqsEndpoint,
      SQS_WORKER_ACTOR: 'cli-test',
    };

    // Act
    const first = await runEntry(
      'bin/sqs-worker.js',
      ['quarantine', 'release', id, '--store', 'dynamodb', '--json'],
      releaseEnv,
    );
    const second = await runEntry(
      'bin/sqs-worker.js',
      ['quarantine', 'release', id, '--store', 'dynamodb', '--json'],
      releaseEnv,
    );

    // Assess
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({
      quarantineId: id,
      inboxRearmed: false,
      aggregate: null,
    });
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 1, inFlight: 0 });
    expect(await itemOf(fixture.table, quarantineKey('case-worker', id))).toMatchObject({
      releasedBy: 'cli-test',
    });
    expect(second.code).toBe(1);
    expect(JSON.parse(second.stdout).error).toMatchObject({ type: 'OperationError', exitCode: 1 });
    expect(second.stderr).toContain('was already released at');
  });
});

describe('CLI: health and inbox purge with --store dynamodb', () => {
  it('runs health on the table, as the health job reads it, without a database (exit 0)', async () => {
    // Prepare: the consumer's quarantine items, and an unreachable database a PostgreSQL read would fail on.
    const fixture = await quarantinedTable();
    const env = {
      DATABASE_URL: 'postgres://ops@127.0.0.1:9/none',
      DYNAMODB_TABLE: fixture.table,
      DYNAMODB_ENDPOINT: dynamo.endpoint,
      AWS_REGION: 'us-east-1',
    };

    // Act
    const health = await runEntry('bin/sqs-worker.js', ['health', '--store', 'dynamodb', '--json'], env);
    const listed = await runEntry(
      'bin/sqs-worker.js',
      ['quarantine', 'list', '--store', 'dynamodb', '--json'],
      env,
    );
    const text = await runEntry('bin/sqs-worker.js', ['health', '--store', 'dynamodb'], env);

    // Assess: its open quarantine is what quarantine list shows; no lock figures (DynamoDB has none).
    expect(health.code).toBe(0);
    const figures = JSON.parse(health.stdout);
    expect(figures).toMatchObject({ consumer: 'case-worker', truncated: false, leasesExpired: 0 });
    expect(figures.quarantine.open).toBe(JSON.parse(listed.stdout).entries.length);
    expect(figures.quarantine.open).toBeGreaterThan(0);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`Health of consumer case-worker`);
    expect(text.stdout).toContain('open quarantine items');
    expect(text.stdout).not.toContain('lock waits');
  });

  it('refuses inbox purge naming the store and what to use instead, without connecting to a database (exit 2)', async () => {
    // An unreachable database: a command that tried it would fail on the connection instead.
    const env = { DATABASE_URL: 'postgres://ops@127.0.0.1:9/none', AWS_REGION: 'us-east-1' };

    const purge = await runEntry('bin/sqs-worker.js', ['inbox', 'purge', '--older-than', '30d', '--json'], {
      ...env,
      WORKER_STORE: 'dynamodb',
    });

    expect(purge.code).toBe(2);
    expect(JSON.parse(purge.stdout).error).toMatchObject({ type: 'UsageError', exitCode: 2 });
    expect(purge.stderr).toContain('inbox items expire by TTL');
  });

  it('runs queue status without the inbox join (the database is not read)', async () => {
    const { queueUrl } = await createQueues(sqs);

    const status = await runEntry('bin/sqs-worker.js', ['queue', 'status', '--store', 'dynamodb', '--json'], {
      DATABASE_URL: 'postgres://ops@127.0.0.1:9/none',
      WORKER_QUEUE_URL: queueUrl,
      SQS_ENDPOINT: sqsEndpoint,
      AWS_REGION: 'us-east-1',
    });

    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({
      oldestUnfinishedKey: null,
      oldestUnfinishedAgeSeconds: null,
    });
  });
});
