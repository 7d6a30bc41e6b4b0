import { App } from 'aws-cdk-lib';
import { Capture, Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { LOG_QUERIES, type LogQueryName, renderLogQuery } from '../../lambda/worker/log-queries.ts';
import { SqsInboxWorkerStack, type SqsInboxWorkerStackProps } from '../../lib/sqs-inbox-worker-stack.ts';

// Bundling skipped: the code asset still has a hash (of the construct's path then), and the image is only fingerprinted.
const noBundling = { 'aws:cdk:bundling-stacks': [] };

function synth(id: string, worker: SqsInboxWorkerStackProps['worker'] = {}) {
  const app = new App({ context: noBundling });
  const stack = new SqsInboxWorkerStack(app, id, {
    worker: {
      alarms: 'none',
      queueIdentity: {
        fifo: false,
        queueLogicalId: 'WorkerQueue9380F652',
        deadLetterQueueLogicalId: 'WorkerDeadLetterQueue2879C389',
      },
      ...worker,
    },
  });
  return { stack, template: Template.fromStack(stack) };
}

/** Each saved query is the shared text on exactly the given log group. */
function expectQueriesOn(template: Template, stackName: string, logGroup: unknown): void {
  template.resourceCountIs('AWS::Logs::QueryDefinition', Object.keys(LOG_QUERIES).length);
  for (const name of Object.keys(LOG_QUERIES) as LogQueryName[]) {
    template.hasResourceProperties('AWS::Logs::QueryDefinition', {
      Name: `${stackName}/${name}`,
      QueryString: renderLogQuery(name),
      LogGroupNames: [logGroup],
    });
  }
}

describe('The saved Logs Insights queries and WORKER_VERSION (runtime lambda)', () => {
  const { template } = synth('LogsLambda');

  it("saves every runbook query on the worker function's log group, and outputs its name", () => {
    // Prepare
    const logGroup = new Capture();
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: 'SQS → PostgreSQL inbox worker',
      LoggingConfig: { LogGroup: logGroup },
    });

    // Assess
    expectQueriesOn(template, 'LogsLambda', logGroup.asObject());
    template.hasOutput('WorkerLogGroupName', { Value: logGroup.asObject() });
  });

  it("sets the function's WORKER_VERSION to the first 12 characters of its code asset's hash", () => {
    // Prepare
    const key = new Capture();
    const version = new Capture();
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: 'SQS → PostgreSQL inbox worker',
      Code: { S3Key: key },
      Environment: { Variables: Match.objectLike({ WORKER_VERSION: version }) },
    });

    // Assess
    expect(version.asString()).toMatch(/^[0-9a-f]{12}$/);
    expect(key.asString()).toBe(`${key.asString().slice(0, 64)}.zip`);
    expect(key.asString().startsWith(version.asString())).toBe(true);
  });

  it('keeps a WORKER_VERSION given in workerEnvironment', () => {
    // Act
    const given = synth('LogsGiven', { workerEnvironment: { WORKER_VERSION: 'release-42' } }).template;

    // Assess
    given.hasResourceProperties('AWS::Lambda::Function', {
      Description: 'SQS → PostgreSQL inbox worker',
      Environment: { Variables: Match.objectLike({ WORKER_VERSION: 'release-42' }) },
    });
  });
});

describe('The saved Logs Insights queries and WORKER_VERSION (runtime fargate)', () => {
  const { stack, template } = synth('LogsFargate', { runtime: 'fargate' });

  it("saves every runbook query on the poller's log group, and sets WORKER_VERSION to its image tag", () => {
    // Prepare
    const logGroup = new Capture();
    const image = new Capture();
    template.hasResourceProperties('AWS::ECS::TaskDefinition', {
      ContainerDefinitions: Match.arrayWith([
        Match.objectLike({
          Name: 'Poller',
          Image: image,
          LogConfiguration: { Options: Match.objectLike({ 'awslogs-group': logGroup }) },
          Environment: Match.arrayWith([
            { Name: 'WORKER_VERSION', Value: Match.stringLikeRegexp('^[0-9a-f]{12}$') },
          ]),
        }),
      ]),
    });
    const hash = stack.worker.pollerService?.image.assetHash as string;
    const version = hash.slice(0, 12);

    // Assess
    expectQueriesOn(template, 'LogsFargate', logGroup.asObject());
    template.hasResourceProperties('AWS::ECS::TaskDefinition', {
      ContainerDefinitions: Match.arrayWith([
        Match.objectLike({ Environment: Match.arrayWith([{ Name: 'WORKER_VERSION', Value: version }]) }),
      ]),
    });
    // The image is pushed with the tag of that hash.
    expect(JSON.stringify(image.asObject())).toContain(`:${hash}`);
  });
});
