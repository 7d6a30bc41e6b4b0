import { readFileSync } from 'node:fs';
import { App } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { SqsInboxWorkerStack } from '../../lib/sqs-inbox-worker-stack.ts';
import { stageSettings } from '../../lib/stage-settings.ts';

// The stages as cdk.json defines them, synthesized the way bin/app.ts does (bundling skipped).
const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as {
  context: { stages: Record<string, { production?: boolean; store?: string }> };
};
const stages = Object.entries(cdkJson.context.stages);

function synthStack(stage: string, overrides: Record<string, unknown> = {}): SqsInboxWorkerStack {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [], stage } });
  return new SqsInboxWorkerStack(app, `SqsInboxWorker-${stage}`, {
    worker: stageSettings(stage, { ...cdkJson.context.stages[stage], ...overrides }),
  });
}

function synthStage(stage: string, overrides: Record<string, unknown> = {}): Template {
  return Template.fromStack(synthStack(stage, overrides));
}

describe('Stages of cdk.json', () => {
  it('has a production stage and a non-production stage', () => {
    expect(stages.map(([, s]) => s.production)).toEqual(expect.arrayContaining([true, false]));
  });

  it.each(stages)('stage %s keeps its data on removal and replacement only when production', (stage, raw) => {
    // Act
    const template = synthStage(stage);

    // Assess
    const dataPolicy = raw.production ? 'Retain' : 'Delete';
    const databasePolicy = raw.production ? 'Snapshot' : 'Delete';
    // The source queue and its DLQ; on DynamoDB, the stream relay's failure queue too.
    expect(Object.keys(template.findResources('AWS::SQS::Queue'))).toHaveLength(
      stage.includes('dynamodb') ? 3 : 2,
    );
    // Every resource that holds messages or data (a bucket too, should one be added) follows the stage.
    const holdingData = {
      ...template.findResources('AWS::SQS::Queue'),
      ...template.findResources('AWS::S3::Bucket'),
      ...template.findResources('AWS::DynamoDB::Table'),
    };
    for (const [id, resource] of Object.entries(holdingData)) {
      expect({ id, ...resource }).toMatchObject({
        DeletionPolicy: dataPolicy,
        UpdateReplacePolicy: dataPolicy,
      });
    }
    if (raw.store === 'dynamodb') {
      // The table holds the data (checked above with the queues); there is no database to snapshot.
      template.resourceCountIs('AWS::DynamoDB::Table', 1);
      template.resourceCountIs('AWS::RDS::DBInstance', 0);
    } else {
      template.hasResource('AWS::RDS::DBInstance', {
        DeletionPolicy: databasePolicy,
        UpdateReplacePolicy: databasePolicy,
      });
    }
  });

  it('refuses a change of the prod stage that would replace its queues, naming the cdk.json settings', () => {
    // Act: the stage as cdk.json records it, with the queues turned FIFO
    const synthesize = () => synthStage('prod', { fifo: true });

    // Assess
    expect(synthesize).toThrow(
      /\[SqsInboxWorker-prod\/Worker\] fifo is true but stages\.prod\.queueIdentity\.fifo records false: .* then set stages\.prod\.acknowledgeQueueReplacement: true for that deploy/,
    );
  });

  it("dev says alarms: 'none' on purpose: the alarms exist, the topic has no subscription", () => {
    // Act
    const template = synthStage('dev');

    // Assess
    expect(cdkJson.context.stages.dev).toMatchObject({ alarms: 'none' });
    expect(Object.keys(template.findResources('AWS::CloudWatch::Alarm')).length).toBeGreaterThan(10);
    template.resourceCountIs('AWS::SNS::Subscription', 0);
  });

  it('prod subscribes its alarm e-mail, and warns while it is the example.com placeholder', () => {
    // Act
    const stack = synthStack('prod');
    const template = Template.fromStack(stack);

    // Assess
    template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'oncall@example.com',
    });
    Annotations.fromStack(stack).hasWarning(
      '/SqsInboxWorker-prod/Worker',
      Match.stringLikeRegexp('alarmEmail \\(oncall@example.com\\) is at a reserved example domain'),
    );
    const real = Annotations.fromStack(synthStack('prod', { alarmEmail: 'oncall@corp.internal' }));
    expect(real.findWarning('*', Match.stringLikeRegexp('reserved example domain'))).toHaveLength(0);
  });

  it('sends the alarms to an existing topic given by alarmTopicArn, creating none', () => {
    // Act
    const arn = 'arn:aws:sns:eu-west-1:123456789012:oncall';
    const template = synthStage('dev', { alarms: null, alarmTopicArn: arn });

    // Assess
    template.resourceCountIs('AWS::SNS::Topic', 0);
    for (const alarm of Object.values(template.findResources('AWS::CloudWatch::Alarm'))) {
      expect(alarm.Properties.AlarmActions).toEqual([arn]);
    }
  });

  it('fails the synth of a stage that names no reader, naming the fix', () => {
    expect(() => synthStage('dev', { alarms: null })).toThrow(
      /nobody reads the alarms: set alarmEmail .* or set alarms: 'none' to say on purpose that no one is notified/,
    );
  });
});

describe('Stage dev: deploys on a new account, whose Lambda concurrency quota leaves no room to reserve', () => {
  it('reserves no concurrency for any function in dev; in prod the worker and one each for the relay, breaker, health and retention jobs', () => {
    // Act
    const dev = synthStage('dev');
    const prod = synthStage('prod');

    // Assess
    const reserved = (template: Template) =>
      Object.values(template.findResources('AWS::Lambda::Function'))
        .map((fn) => fn.Properties.ReservedConcurrentExecutions)
        .filter((value) => value !== undefined);
    expect(reserved(dev)).toEqual([]);
    expect(reserved(prod).sort((a, b) => a - b)).toEqual([1, 1, 1, 1, 100]);
    // The event source still bounds the worker (and so the database) in dev.
    dev.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      ScalingConfig: { MaximumConcurrency: 20 },
    });
  });

  it('warns at synth that nothing is reserved, and refuses a reservedConcurrency it would ignore', () => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [], stage: 'dev' } });
    const stack = new SqsInboxWorkerStack(app, 'SqsInboxWorker-dev', {
      worker: stageSettings('dev', cdkJson.context.stages.dev),
    });

    // Act
    const warnings = Annotations.fromStack(stack).findWarning(
      '*',
      Match.stringLikeRegexp('reserveConcurrency is false'),
    );
    const conflicting = () => synthStage('dev', { reservedConcurrency: 30 });

    // Assess
    expect(warnings).toHaveLength(1);
    expect(conflicting).toThrow(
      'reservedConcurrency (30) is set while reserveConcurrency is false; remove one of them',
    );
  });
});
