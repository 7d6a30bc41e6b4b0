import type { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { dlqMoveTask } from '../../tools/ops/dlq-move-task.ts';
import { OperationError } from '../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { postgresOpsStore } from '../../tools/ops/stores/postgres/index.ts';
import { createTestDatabase } from '../support/database.ts';

const db = await createTestDatabase();
const store = postgresOpsStore({ sql: () => db.sql });

const DLQ_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/case-worker-dlq';
const DLQ_ARN = 'arn:aws:sqs:eu-west-1:123456789012:case-worker-dlq';
const SOURCE_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/case-worker';
const SOURCE_ARN = 'arn:aws:sqs:eu-west-1:123456789012:case-worker';

/**
 * A recording SQS client for the move-task APIs, which the local emulator lacks (the one allowed mock):
 * it answers GetQueueAttributes and the three move-task commands like SQS and records every input.
 */
function recordingSqs(options: { runningTask?: boolean; startFails?: boolean } = {}) {
  const calls: Array<{ command: string; input: Record<string, unknown> }> = [];
  const client = {
    async send(command: { constructor: { name: string }; input: Record<string, unknown> }) {
      const name = command.constructor.name;
      calls.push({ command: name, input: command.input });
      switch (name) {
        case 'GetQueueAttributesCommand':
          return { Attributes: { QueueArn: command.input.QueueUrl === DLQ_URL ? DLQ_ARN : SOURCE_ARN } };
        case 'StartMessageMoveTaskCommand':
          if (options.startFails) {
            throw Object.assign(new Error('There is already a task running.'), {
              name: 'UnsupportedOperation',
            });
          }
          return { TaskHandle: 'handle-1' };
        case 'ListMessageMoveTasksCommand':
          return {
            Results: options.runningTask
              ? [
                  {
                    TaskHandle: 'handle-1',
                    Status: 'RUNNING',
                    SourceArn: DLQ_ARN,
                    MaxNumberOfMessagesPerSecond: 10,
                    ApproximateNumberOfMessagesMoved: 40,
                    ApproximateNumberOfMessagesToMove: 100,
                    StartedTimestamp: 1_780_000_000_000,
                  },
                ]
              : [],
          };
        case 'CancelMessageMoveTaskCommand':
          return { ApproximateNumberOfMessagesMoved: 42 };
        default:
          throw new Error(`unexpected command ${name}`);
      }
    },
  };
  return { client: client as unknown as SQSClient, calls };
}

describe('Function: dlqMoveTask()', () => {
  it('starts a rate-limited move task from the DLQ and audits it', async () => {
    // Prepare
    const { client, calls } = recordingSqs();
    const out = createMemoryOutput({ json: true });

    // Act
    const result = await dlqMoveTask(
      { sqs: client, out, store },
      {
        action: 'start',
        dlqUrl: DLQ_URL,
        consumer: 'case-worker',
        ratePerSecond: 10,
        destinationUrl: SOURCE_URL,
        actor: 'ops',
      },
    );

    // Assess
    expect(result).toEqual({
      action: 'start',
      taskHandle: 'handle-1',
      sourceArn: DLQ_ARN,
      destinationArn: SOURCE_ARN,
      ratePerSecond: 10,
    });
    expect(calls.find((call) => call.command === 'StartMessageMoveTaskCommand')?.input).toEqual({
      SourceArn: DLQ_ARN,
      DestinationArn: SOURCE_ARN,
      MaxNumberOfMessagesPerSecond: 10,
    });
    const [audit] =
      await db.sql`select action, detail, actor from ops_audit where action = 'dlq_move_task_start'`;
    expect(audit).toEqual({
      action: 'dlq_move_task_start',
      detail: expect.objectContaining({ taskHandle: 'handle-1', ratePerSecond: 10 }),
      actor: 'ops',
    });
    expect(out.lastJson<{ taskHandle: string }>().taskHandle).toBe('handle-1');
  });

  it('lists the move tasks of the DLQ', async () => {
    // Prepare
    const { client, calls } = recordingSqs({ runningTask: true });
    const out = createMemoryOutput();

    // Act
    const result = await dlqMoveTask(
      { sqs: client, out },
      { action: 'status', dlqUrl: DLQ_URL, consumer: 'case-worker' },
    );

    // Assess
    expect(result).toMatchObject({
      action: 'status',
      tasks: [{ status: 'RUNNING', approximateNumberOfMessagesMoved: 40 }],
    });
    expect(calls.find((call) => call.command === 'ListMessageMoveTasksCommand')?.input).toEqual({
      SourceArn: DLQ_ARN,
      MaxResults: 10,
    });
    expect(out.stdout()).toContain('RUNNING');
  });

  it('cancels the running task when no handle is given, and audits it', async () => {
    // Prepare
    const { client, calls } = recordingSqs({ runningTask: true });

    // Act
    const result = await dlqMoveTask(
      { sqs: client, out: createMemoryOutput(), store },
      { action: 'cancel', dlqUrl: DLQ_URL, consumer: 'case-worker' },
    );

    // Assess
    expect(result).toEqual({
      action: 'cancel',
      taskHandle: 'handle-1',
      approximateNumberOfMessagesMoved: 42,
    });
    expect(calls.find((call) => call.command === 'CancelMessageMoveTaskCommand')?.input).toEqual({
      TaskHandle: 'handle-1',
    });
    const [audit] =
      await db.sql`select count(*)::int as n from ops_audit where action = 'dlq_move_task_cancel'`;
    expect(audit?.n).toBe(1);
  });

  it('fails with exit code 1 and the SQS reason when the task cannot start or nothing runs', async () => {
    // Act
    const startError = await dlqMoveTask(
      { sqs: recordingSqs({ startFails: true }).client, out: createMemoryOutput() },
      { action: 'start', dlqUrl: DLQ_URL, consumer: 'case-worker', ratePerSecond: 5 },
    ).catch((caught: unknown) => caught);
    const cancelError = await dlqMoveTask(
      { sqs: recordingSqs().client, out: createMemoryOutput() },
      { action: 'cancel', dlqUrl: DLQ_URL, consumer: 'case-worker' },
    ).catch((caught: unknown) => caught);

    // Assess
    expect(startError).toBeInstanceOf(OperationError);
    expect((startError as Error).message).toContain('UnsupportedOperation: There is already a task running.');
    expect(cancelError).toBeInstanceOf(OperationError);
    expect((cancelError as Error).message).toContain('No RUNNING move task');
  });
});
