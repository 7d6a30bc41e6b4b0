import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { exampleDynamoHandlers } from '../../../../lambda/domain/dynamodb/index.ts';
import { OperationError } from '../../../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../../../tools/ops/memory-output.ts';
import { runOpsCommand } from '../../../../tools/ops/run-ops-command.ts';
import { dynamoInboxShow } from '../../../../tools/ops/stores/dynamodb/dynamo-inbox-show.ts';
import { dynamoInboxStats } from '../../../../tools/ops/stores/dynamodb/dynamo-inbox-stats.ts';
import { dynamoProcessor } from '../../../support/dynamo-processor.ts';
import { useTestDynamoDb } from '../../../support/dynamodb.ts';
import { caseStageEnvelope, envelopeFactory, sqsRecordFactory } from '../../../support/sqs-event.ts';

const dynamo = useTestDynamoDb();
let table: string;
const deadlineFor = (caseId: string) =>
  envelopeFactory({
    messageType: 'CaseDeadlineCalculationRequested',
    idempotencyKey: `case:${caseId}:deadline`,
    aggregateId: caseId,
    payload: { caseId, stage: 'REVIEW', effectiveAt: '2026-07-06T10:00:00Z' },
  });

// The items are written by the store itself (the engine's record processor), not seeded by hand.
const missingCase = `CASE-${randomUUID()}`;
beforeAll(async () => {
  table = await dynamo.createTable('ops');
  const process = dynamoProcessor(dynamo, table, exampleDynamoHandlers);
  await process(sqsRecordFactory(caseStageEnvelope('CASE-OPS-1', 1)));
  await process(sqsRecordFactory(caseStageEnvelope('CASE-OPS-2', 1)));
  await process(sqsRecordFactory(deadlineFor(missingCase))); // FAILED_RETRYABLE CASE_NOT_FOUND
  await process(sqsRecordFactory('not json at all')); // quarantine item without an inbox item
});

const target = () => ({ doc: dynamo.doc, tableName: table });

describe('Function: dynamoInboxStats()', () => {
  it('counts the consumer items by status and failure code, the oldest FAILED_RETRYABLE and open quarantine items', async () => {
    // Prepare
    const out = createMemoryOutput();

    // Act
    const result = await dynamoInboxStats(
      { dynamo: target(), out, clock: { now: () => new Date(Date.now() + 1_000), sleep: async () => {} } },
      { consumer: 'case-worker' },
    );

    // Assess
    expect(result.byStatus).toEqual({ PROCESSING: 0, COMPLETED: 2, FAILED_RETRYABLE: 1, FAILED_TERMINAL: 0 });
    expect(result.failures).toEqual([
      { status: 'FAILED_RETRYABLE', failureCode: 'CASE_NOT_FOUND', count: 1 },
    ]);
    expect(result.oldestRetryable).toMatchObject({
      idempotencyKey: `case:${missingCase}:deadline`,
      messageType: 'CaseDeadlineCalculationRequested',
      attempts: 1,
    });
    expect(result.completedLastHour).toBe(2);
    expect(result.openQuarantine).toBe(1);
    expect(out.stdout()).toContain('Open quarantine entries: 1');
  });

  it('counts nothing for another consumer', async () => {
    const result = await dynamoInboxStats(
      {
        dynamo: target(),
        out: createMemoryOutput(),
        clock: { now: () => new Date(), sleep: async () => {} },
      },
      { consumer: 'other-worker' },
    );
    expect(result.byStatus).toEqual({ PROCESSING: 0, COMPLETED: 0, FAILED_RETRYABLE: 0, FAILED_TERMINAL: 0 });
    expect(result.openQuarantine).toBe(0);
  });
});

describe('Function: dynamoInboxShow()', () => {
  it('shows the inbox item of a key without its lease token', async () => {
    // Prepare
    const out = createMemoryOutput();

    // Act
    const result = await dynamoInboxShow(
      { dynamo: target(), out },
      { consumer: 'case-worker', idempotencyKey: `case:${missingCase}:deadline` },
    );

    // Assess
    expect(result.inbox).toMatchObject({
      status: 'FAILED_RETRYABLE',
      failureCode: 'CASE_NOT_FOUND',
      attempts: 1,
    });
    expect(result.inbox).not.toHaveProperty('leaseToken');
    expect(out.stdout()).toContain('FAILED_RETRYABLE');
    expect(out.stdout()).not.toContain('REVIEW'); // no payload value
  });

  it('fails with exit code 1 for an unknown key, naming the table setting', async () => {
    const error = await dynamoInboxShow(
      { dynamo: target(), out: createMemoryOutput() },
      { consumer: 'case-worker', idempotencyKey: 'nope' },
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OperationError);
    expect((error as OperationError).exitCode).toBe(1);
    expect((error as Error).message).toMatch(/"nope".*--dynamodb-table \/ DYNAMODB_TABLE/);
  });
});

describe('Function: runOpsCommand() with WORKER_STORE=dynamodb', () => {
  const run = async (
    env: Record<string, string>,
    command = 'inbox stats',
    action: Parameters<typeof runOpsCommand>[2] = (session) =>
      session.store.inboxStats({ out: session.out, clock: session.clock }, { consumer: 'case-worker' }),
  ) => {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let printed = '';
    let noted = '';
    stdout.on('data', (chunk) => {
      printed += chunk;
    });
    stderr.on('data', (chunk) => {
      noted += chunk;
    });
    const code = await runOpsCommand(command, { json: true }, action, {
      env: { AWS_REGION: 'us-east-1', ...env },
      stdout,
      stderr,
    });
    return { code, printed, noted };
  };

  it('reads the table of DYNAMODB_TABLE at DYNAMODB_ENDPOINT', async () => {
    const { code, printed } = await run({
      WORKER_STORE: 'dynamodb',
      DYNAMODB_TABLE: table,
      DYNAMODB_ENDPOINT: dynamo.endpoint,
    });
    expect(code).toBe(0);
    expect(JSON.parse(printed).byStatus.COMPLETED).toBe(2);
  });

  it('names the flag and the variable when the table is missing (exit 2)', async () => {
    const { code, noted } = await run({ WORKER_STORE: 'dynamodb', DYNAMODB_ENDPOINT: dynamo.endpoint });
    expect(code).toBe(2);
    expect(noted).toContain('Pass --dynamodb-table <value> or set DYNAMODB_TABLE');
  });

  it('refuses a command the store cannot do before its action runs, whatever else is missing (exit 2)', async () => {
    // Prepare: no DLQ URL, no database; an action that would ask for both.
    let ran = false;

    // Act
    const { code, printed } = await run({ WORKER_STORE: 'dynamodb' }, 'inbox purge', async (session) => {
      ran = true;
      session.require('dlqUrl');
    });

    // Assess
    expect(code).toBe(2);
    expect(ran).toBe(false);
    expect(JSON.parse(printed).error).toMatchObject({ type: 'UsageError', exitCode: 2 });
    expect(JSON.parse(printed).error.message).toMatch(
      /^"sqs-worker inbox purge" reads the PostgreSQL store and is not available with --store dynamodb.*inbox items expire by TTL/,
    );
  });
});
