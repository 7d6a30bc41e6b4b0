import { createHash, randomUUID } from 'node:crypto';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { exampleDynamoHandlers } from '../../../../lambda/domain/dynamodb/index.ts';
import { inboxKey, quarantineKey } from '../../../../lambda/stores/dynamodb/item-keys.ts';
import { systemClock } from '../../../../tools/ops/clock.ts';
import { FailedChecksError } from '../../../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../../../tools/ops/memory-output.ts';
import { quarantineReleaseAll } from '../../../../tools/ops/quarantine-release-all.ts';
import { dynamoOpsStore } from '../../../../tools/ops/stores/dynamodb/index.ts';
import { dynamoProcessor } from '../../../support/dynamo-processor.ts';
import { useTestDynamoDb } from '../../../support/dynamodb.ts';
import { caseStageEnvelope, sqsRecordFactory } from '../../../support/sqs-event.ts';
import { createQueues, deadlineFor, depth, startOpsSqs } from '../../ops-fixture.ts';

const dynamo = useTestDynamoDb();
const { sqs } = await startOpsSqs();
const hashOf = (body: string) => createHash('sha256').update(body).digest('hex');

/**
 * A table whose store quarantined three deadline requests of missing cases (and an undecodable body); the second
 * case's stage change completed afterwards, so its request's guard refuses a release.
 */
async function mixedQuarantine() {
  const table = await dynamo.createTable('bulk');
  const process = dynamoProcessor(dynamo, table, exampleDynamoHandlers);
  const cases = [0, 1, 2].map(() => `CASE-${randomUUID()}`);
  const bodies = cases.map((caseId) => JSON.stringify(deadlineFor(caseId)));
  for (const body of bodies) await process(sqsRecordFactory(body));
  await process(sqsRecordFactory(`not json ${randomUUID()}`));
  await process(sqsRecordFactory(caseStageEnvelope(cases[1] as string, 1)));
  const { queueUrl } = await createQueues(sqs);
  const store = dynamoOpsStore({ target: () => ({ doc: dynamo.doc, tableName: table }) });
  const get = async (Key: ReturnType<typeof inboxKey>) =>
    (await dynamo.doc.send(new GetCommand({ TableName: table, Key, ConsistentRead: true }))).Item;
  const audits = async () =>
    ((await dynamo.doc.send(new ScanCommand({ TableName: table, ConsistentRead: true }))).Items ?? []).filter(
      (item) => String(item.PK).startsWith('AUDIT#') && item.action === 'quarantine_release',
    );
  return { table, store, cases, ids: bodies.map(hashOf), queueUrl, get, audits };
}

describe('Function: quarantineReleaseAll() on the DynamoDB store', () => {
  it('releases the matching items, skips the one its guard refuses, audited per item (exit 1)', async () => {
    // Prepare
    const fixture = await mixedQuarantine();
    const out = createMemoryOutput({ json: true });

    // Act
    const error = await quarantineReleaseAll(
      { store: fixture.store, sqs, out, clock: systemClock },
      {
        consumer: 'case-worker',
        queueUrl: fixture.queueUrl,
        reasonCode: 'CASE_NOT_FOUND',
        messageType: 'CaseDeadlineCalculationRequested',
        limit: 100,
        yes: true,
      },
    ).catch((caught: unknown) => caught);

    // Assess
    expect(error).toBeInstanceOf(FailedChecksError);
    const result = out.lastJson<{ matched: number; released: number; skipped: number; items: object[] }>();
    expect(result).toMatchObject({ matched: 3, released: 2, skipped: 1 });
    expect(result.items).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ quarantineId: fixture.ids[0], result: 'released' }),
        expect.objectContaining({
          quarantineId: fixture.ids[1],
          result: 'skipped',
          skipCode: 'NEWER_COMPLETED_EVENTS',
        }),
        expect.objectContaining({ quarantineId: fixture.ids[2], result: 'released' }),
      ]),
    );
    const releasedAt = async (id: string) =>
      (await fixture.get(quarantineKey('case-worker', id)))?.releasedAt;
    expect(await releasedAt(fixture.ids[0] as string)).toEqual(expect.any(String));
    expect(await releasedAt(fixture.ids[1] as string)).toBeUndefined();
    expect(await releasedAt(fixture.ids[2] as string)).toEqual(expect.any(String));
    const audits = await fixture.audits();
    expect(audits.map((item) => (item.detail as { quarantineId: string }).quarantineId).sort()).toEqual(
      [fixture.ids[0], fixture.ids[2]].sort(),
    );
    expect(audits.every((item) => item.outcome === 'DONE')).toBe(true);
    const statuses = await Promise.all(
      fixture.cases.map(
        async (caseId) => (await fixture.get(inboxKey('case-worker', `case:${caseId}:deadline`)))?.status,
      ),
    );
    expect(statuses).toEqual(['FAILED_RETRYABLE', 'FAILED_TERMINAL', 'FAILED_RETRYABLE']);
    const received = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: fixture.queueUrl, MaxNumberOfMessages: 10 }),
    );
    expect((received.Messages ?? []).map((m) => hashOf(m.Body ?? '')).sort()).toEqual(
      [fixture.ids[0], fixture.ids[2]].sort(),
    );
  });

  it('lists on --dry-run the three matching items and the guarded one, sending nothing', async () => {
    // Prepare
    const fixture = await mixedQuarantine();
    const out = createMemoryOutput();

    // Act
    const result = await quarantineReleaseAll(
      { store: fixture.store, sqs, out, clock: systemClock },
      {
        consumer: 'case-worker',
        queueUrl: fixture.queueUrl,
        reasonCode: 'CASE_NOT_FOUND',
        limit: 100,
        dryRun: true,
      },
    );

    // Assess
    expect(result.items.map((i) => i.result).sort()).toEqual([
      'would release',
      'would release',
      'would skip',
    ]);
    expect(result.items.find((i) => i.result === 'would skip')?.quarantineId).toBe(fixture.ids[1]);
    expect(out.stdout()).toContain('Dry run: 2 of 3 matching entries would be released');
    expect(out.stdout()).not.toContain('REVIEW'); // a payload value
    expect(await depth(sqs, fixture.queueUrl)).toEqual({ visible: 0, inFlight: 0 });
    expect(await fixture.audits()).toEqual([]);
  });
});
