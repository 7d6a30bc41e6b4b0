import { App, Duration } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambda/config.ts';
import { resolveWorkerSettings, WorkerSettingsError } from '../../lib/resolve-worker-settings.ts';
import { SqsInboxWorkerStack, type SqsInboxWorkerStackProps } from '../../lib/sqs-inbox-worker-stack.ts';
import type { WorkerSettings } from '../../lib/worker-settings.ts';

const DEPLOYED_QUEUES = {
  fifo: false,
  queueLogicalId: 'WorkerQueue9380F652',
  deadLetterQueueLogicalId: 'WorkerDeadLetterQueue2879C389',
} as const;

const POLICY = {
  THROTTLED: { base: Duration.seconds(5), max: Duration.minutes(5) },
  PARTNER_RATE_LIMITED: { base: Duration.seconds(30), max: Duration.hours(1), maxAttempts: 8 },
} as const;

function synth(worker: SqsInboxWorkerStackProps['worker']) {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new SqsInboxWorkerStack(app, 'Retry', {
    worker: { queueIdentity: DEPLOYED_QUEUES, alarms: 'none', ...worker },
  });
  return Template.fromStack(stack);
}

function problemsOf(props: Omit<WorkerSettings, 'vpc'>): readonly string[] {
  try {
    resolveWorkerSettings({ alarms: 'none', ...props });
    return [];
  } catch (error) {
    if (error instanceof WorkerSettingsError) return error.problems;
    throw error;
  }
}

describe('Prop: retryPolicy of SqsDatabaseWorker', () => {
  it("sets WORKER_RETRY_POLICY and WORKER_HANDLER_FAILURE_CODES on the function, read back by the worker's loadConfig", () => {
    // Act
    const template = synth({ retryPolicy: POLICY, handlerFailureCodes: ['PARTNER_RATE_LIMITED'] });

    // Assess
    const functions = template.findResources('AWS::Lambda::Function');
    const [, worker] = Object.entries(functions).find(([id]) => id.includes('WorkerFunction')) ?? [];
    const variables = (worker as { Properties: { Environment: { Variables: Record<string, unknown> } } })
      .Properties.Environment.Variables;
    expect(variables).toMatchObject({
      WORKER_RETRY_POLICY: 'THROTTLED=5:300,PARTNER_RATE_LIMITED=30:3600:8',
      WORKER_HANDLER_FAILURE_CODES: 'PARTNER_RATE_LIMITED',
    });
    const config = loadConfig({
      DATABASE_URL: 'postgres://worker@localhost:5432/app',
      WORKER_RETRY_POLICY: String(variables.WORKER_RETRY_POLICY),
      WORKER_HANDLER_FAILURE_CODES: String(variables.WORKER_HANDLER_FAILURE_CODES),
    });
    expect(config.retryPolicy).toEqual({
      THROTTLED: { baseSeconds: 5, maxSeconds: 300 },
      PARTNER_RATE_LIMITED: { baseSeconds: 30, maxSeconds: 3600, maxAttempts: 8 },
    });
  });

  it("sets them on the poller's container too (runtime fargate)", () => {
    const template = synth({ runtime: 'fargate', retryPolicy: { THROTTLED: POLICY.THROTTLED } });
    template.hasResourceProperties('AWS::ECS::TaskDefinition', {
      ContainerDefinitions: Match.arrayWith([
        Match.objectLike({
          Environment: Match.arrayWith([{ Name: 'WORKER_RETRY_POLICY', Value: 'THROTTLED=5:300' }]),
        }),
      ]),
    });
  });

  it('sets neither variable when unset', () => {
    expect(resolveWorkerSettings({ alarms: 'none' }).retryPolicyEnvironment).toEqual({});
  });

  it('fails synth naming each bad entry and the fix', () => {
    // Act
    const problems = problemsOf({
      maxReceiveCount: 6,
      handlerFailureCodes: ['OWN CODE'],
      retryPolicy: {
        THROTTELD: { base: Duration.seconds(5), max: Duration.minutes(5) },
        LOCK_TIMEOUT: { base: Duration.minutes(10), max: Duration.minutes(1) },
        DEADLOCK_DETECTED: { base: Duration.seconds(1), max: Duration.hours(13) },
        THROTTLED: { base: Duration.seconds(1), max: Duration.seconds(10), maxAttempts: 7 },
      },
      workerEnvironment: { WORKER_RETRY_POLICY: 'THROTTLED=1:2' },
    });

    // Assess
    expect(problems).toEqual(
      expect.arrayContaining([
        'handlerFailureCodes lists "OWN CODE", which is not a failure code: a code is 1–100 characters without spaces, commas, "=" or ":"; write it as your handler throws it',
        expect.stringContaining('retryPolicy names an unknown failure code "THROTTELD"'),
        'retryPolicy LOCK_TIMEOUT: maxSeconds (60) must not be below baseSeconds (600); raise the maximum or lower the base',
        expect.stringContaining(
          'retryPolicy DEADLOCK_DETECTED: maxSeconds must be a whole number of seconds from 0 to 42300 (given 46800',
        ),
        'retryPolicy THROTTLED: maxAttempts (7) must not exceed maxReceiveCount (6): SQS moves the message to the DLQ before its last attempts; raise maxReceiveCount or lower maxAttempts',
        expect.stringContaining('workerEnvironment sets WORKER_RETRY_POLICY'),
      ]),
    );
    expect(
      problems.filter((problem) => /retryPolicy|handlerFailureCodes|WORKER_RETRY_POLICY/.test(problem)),
    ).toHaveLength(6);
  });
});
