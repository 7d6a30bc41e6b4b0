import { readFileSync } from 'node:fs';
import { App } from 'aws-cdk-lib';
import { Capture, Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { SqsInboxWorkerStack } from '../../lib/sqs-inbox-worker-stack.ts';
import { stageSettings } from '../../lib/stage-settings.ts';

// Bundling skipped, as in worker-stack.test.ts: the function settings still reach the template.
const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as {
  context: { stages: Record<string, Record<string, unknown>> };
};

function synthStage(stage: string, overrides: Record<string, unknown> = {}) {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [], stage } });
  const stack = new SqsInboxWorkerStack(app, `Tracing-${stage}`, {
    worker: stageSettings(stage, { ...cdkJson.context.stages[stage], ...overrides }),
  });
  return { app, template: Template.fromStack(stack) };
}

const WORKER = 'SQS → PostgreSQL inbox worker';
const RELAY = Match.stringLikeRegexp('^Publishes pending outbox rows');

/** The logical id of the one function with this description. */
function functionId(template: Template, description: unknown): string {
  const found = Object.keys(
    template.findResources('AWS::Lambda::Function', {
      Properties: Match.objectLike({ Description: description }),
    }),
  );
  expect(found).toHaveLength(1);
  return found[0] as string;
}

/** The X-Ray actions granted to the role of a function, from every policy attached to that role. */
function xrayActionsOf(template: Template, functionLogicalId: string): string[] {
  const fn = template.toJSON().Resources[functionLogicalId];
  const roleRef = fn.Properties.Role['Fn::GetAtt'][0] as string;
  const policies = template.findResources('AWS::IAM::Policy', {
    Properties: Match.objectLike({ Roles: Match.arrayWith([{ Ref: roleRef }]) }),
  });
  return Object.values(policies).flatMap((policy) =>
    (policy.Properties.PolicyDocument.Statement as { Action: string | string[] }[])
      .flatMap((statement) => [statement.Action].flat())
      .filter((action) => action.startsWith('xray:')),
  );
}

describe('Prop: tracing', () => {
  let off: Template;
  let on: Template;
  let onApp: App;
  beforeAll(() => {
    ({ template: off } = synthStage('dev'));
    ({ template: on, app: onApp } = synthStage('dev', { tracing: true }));
  });

  it('is off by default: no TracingConfig, no POWERTOOLS_TRACE_ENABLED, no X-Ray permissions', () => {
    // Assess
    for (const description of [WORKER, RELAY]) {
      const id = functionId(off, description);
      const fn = off.toJSON().Resources[id].Properties;
      expect(fn.TracingConfig).toBeUndefined();
      expect(fn.Environment.Variables.POWERTOOLS_TRACE_ENABLED).toBeUndefined();
      expect(xrayActionsOf(off, id)).toEqual([]);
    }
  });

  it('turns on active tracing of the worker and the relay, the worker tracer and their X-Ray permissions', () => {
    // Assess
    const variables = new Capture();
    on.hasResourceProperties('AWS::Lambda::Function', {
      Description: WORKER,
      TracingConfig: { Mode: 'Active' },
      Environment: { Variables: variables },
    });
    expect(variables.asObject().POWERTOOLS_TRACE_ENABLED).toBe('true');
    on.hasResourceProperties('AWS::Lambda::Function', {
      Description: RELAY,
      TracingConfig: { Mode: 'Active' },
    });
    for (const description of [WORKER, RELAY]) {
      expect(xrayActionsOf(on, functionId(on, description)).sort()).toEqual([
        'xray:PutTelemetryRecords',
        'xray:PutTraceSegments',
      ]);
    }
  });

  it('leaves the scheduled jobs untraced', () => {
    // Assess: only the worker and the relay are traced
    const traced = on.findResources('AWS::Lambda::Function', {
      Properties: Match.objectLike({ TracingConfig: { Mode: 'Active' } }),
    });
    expect(Object.keys(traced).sort()).toEqual([functionId(on, WORKER), functionId(on, RELAY)].sort());
  });

  it('passes cdk-nag AwsSolutions with tracing on', () => {
    // Act
    const report = new AwsSolutionsChecks(onApp).validateScope(onApp);

    // Assess
    const findings = report.violations.map(
      (v) => `${v.ruleName}: ${v.violatingResources.map((r) => r.constructPath).join(', ')}`,
    );
    expect(findings).toEqual([]);
  });

  it("traces the worker of the DynamoDB store too (its stream relay untraced: the messages carry their producers' traces), passing cdk-nag", () => {
    // Act
    const { template, app } = synthStage('dev-dynamodb', { tracing: true });
    const report = new AwsSolutionsChecks(app).validateScope(app);

    // Assess
    const traced = template.findResources('AWS::Lambda::Function', {
      Properties: Match.objectLike({ TracingConfig: { Mode: 'Active' } }),
    });
    const worker = functionId(template, 'SQS → DynamoDB inbox worker (outside a VPC)');
    expect(Object.keys(traced)).toEqual([worker]);
    expect(xrayActionsOf(template, worker).sort()).toEqual([
      'xray:PutTelemetryRecords',
      'xray:PutTraceSegments',
    ]);
    expect(report.violations.map((v) => v.ruleName)).toEqual([]);
  });

  it('is a stage setting that must be a boolean', () => {
    // Act
    const props = stageSettings('dev', { tracing: true });
    const wrong = () => stageSettings('dev', { tracing: 'yes' });

    // Assess
    expect(props.tracing).toBe(true);
    expect(wrong).toThrow('stages.dev.tracing must be a boolean (given "yes")');
  });
});
