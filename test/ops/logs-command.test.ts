import {
  GetQueryResultsCommand,
  StartQueryCommand,
  type StartQueryCommandInput,
  StopQueryCommand,
} from '@aws-sdk/client-cloudwatch-logs';
import { describe, expect, it } from 'vitest';
import { renderLogQuery } from '../../lambda/worker/log-queries.ts';
import { OperationError, UsageError } from '../../tools/ops/errors.ts';
import { logsCommand, pickLogQuery, resolveLogsSource } from '../../tools/ops/logs-command.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import type { InsightsClient } from '../../tools/ops/run-insights-query.ts';
import type { StackReader } from '../../tools/ops/stack-outputs.ts';
import { fastClock } from './ops-fixture.ts';

/**
 * CloudWatch Logs Insights as a scripted double (the one control plane faked here: no local emulator has it):
 * StartQuery answers a query id, GetQueryResults answers each status of `statuses` in turn, then the rows.
 */
function scriptedInsights(statuses: readonly string[], rows: { field: string; value: string }[][]) {
  const started: StartQueryCommandInput[] = [];
  const stopped: string[] = [];
  let polls = 0;
  const client: InsightsClient = {
    send: (async (command: unknown) => {
      if (command instanceof StartQueryCommand) {
        started.push(command.input);
        return { queryId: 'q-1' };
      }
      if (command instanceof GetQueryResultsCommand) {
        const status = statuses[Math.min(polls, statuses.length - 1)];
        polls += 1;
        return { status, results: status === 'Complete' ? rows : [] };
      }
      if (command instanceof StopQueryCommand) {
        stopped.push(command.input.queryId as string);
        return { success: true };
      }
      throw new Error(`unexpected command ${(command as object).constructor.name}`);
    }) as InsightsClient['send'],
  };
  return { client, started, stopped, polls: () => polls };
}

const stackOutputs = (outputs: Record<string, string>): StackReader => ({
  send: (async () => ({
    Stacks: [
      { Outputs: Object.entries(outputs).map(([OutputKey, OutputValue]) => ({ OutputKey, OutputValue })) },
    ],
  })) as StackReader['send'],
});

describe('Function: logsCommand() against AWS', () => {
  it("runs the query text on the stage's log group, polling until Complete, and drops @ptr", async () => {
    // Prepare
    const now = new Date('2026-07-06T12:00:00Z');
    const insights = scriptedInsights(
      ['Scheduled', 'Running', 'Complete'],
      [
        [
          { field: 'messageType', value: 'PaymentCaptured' },
          { field: 'records', value: '120' },
          { field: '@ptr', value: 'x' },
        ],
      ],
    );
    const out = createMemoryOutput();

    // Act
    const result = await logsCommand(
      {
        out,
        clock: fastClock(now),
        logs: async () => insights.client,
        cloudFormation: async () => stackOutputs({ WorkerLogGroupName: '/aws/lambda/worker-logs' }),
      },
      { query: 'by-message-type', values: {}, sinceSeconds: 3600, source: { kind: 'stage', stage: 'dev' } },
    );

    // Assess
    expect(insights.started).toEqual([
      {
        logGroupNames: ['/aws/lambda/worker-logs'],
        queryString: renderLogQuery('by-message-type'),
        startTime: now.getTime() / 1000 - 3600,
        endTime: now.getTime() / 1000,
      },
    ]);
    expect(insights.polls()).toBe(3);
    expect(result.rows).toEqual([{ messageType: 'PaymentCaptured', records: '120', ratePerMinute: '2' }]);
    expect(out.stdout()).toContain('/aws/lambda/worker-logs');
  });

  it('stops a query still running after the bounded wait and fails naming it', async () => {
    // Prepare
    const insights = scriptedInsights(['Running'], []);

    // Act
    const error = await logsCommand(
      {
        out: createMemoryOutput(),
        clock: fastClock(),
        logs: async () => insights.client,
        cloudFormation: async () => stackOutputs({}),
      },
      {
        query: 'by-idempotency-key',
        values: { idempotencyKey: 'payment:PAY-1' },
        sinceSeconds: 600,
        source: { kind: 'cloudwatch', logGroups: ['/ecs/poller'] },
        timeoutMs: 5000,
      },
    ).catch((caught: unknown) => caught);

    // Assess
    expect(error).toBeInstanceOf(OperationError);
    expect((error as Error).message).toContain('q-1 was still Running after 5 s and was stopped');
    expect(insights.stopped).toEqual(['q-1']);
    expect(insights.started[0]?.queryString).toContain('filter idempotencyKey = "payment:PAY-1"');
  });
});

describe('Function: pickLogQuery() and resolveLogsSource()', () => {
  it('takes exactly one question, and refuses none or two naming the flags', () => {
    expect(pickLogQuery({ slowest: true })).toEqual({ query: 'slowest', values: { limit: 20 } });
    expect(pickLogQuery({ slowest: '5' })).toEqual({ query: 'slowest', values: { limit: 5 } });
    expect(() => pickLogQuery({})).toThrow(UsageError);
    expect(() => pickLogQuery({ key: 'k', code: 'C' })).toThrow('give exactly one of --key');
    expect(() => pickLogQuery({ slowest: 'many' })).toThrow('--slowest takes a whole number');
  });

  it('reads the local file against a local endpoint, and asks for it when it is not set', () => {
    expect(resolveLogsSource({ local: true }, { SQS_WORKER_LOG_FILE: '/tmp/w.log' })).toEqual({
      kind: 'file',
      file: '/tmp/w.log',
    });
    expect(() => resolveLogsSource({ local: true }, {})).toThrow('set SQS_WORKER_LOG_FILE');
    expect(resolveLogsSource({ local: false, logGroups: ['/a'] }, {})).toEqual({
      kind: 'cloudwatch',
      logGroups: ['/a'],
    });
    expect(() => resolveLogsSource({ local: false }, {})).toThrow('Pass --stage <stage>');
  });
});
