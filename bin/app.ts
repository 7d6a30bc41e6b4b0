#!/usr/bin/env node
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { SqsInboxWorkerStack, stageSettings } from '../lib/index.ts';

// CDK app: `npx cdk synth -c stage=prod`. Stage settings live in cdk.json (context.stages). The stack is
// environment-agnostic unless `-c account=… -c region=…` is given, so synth needs no AWS credentials.
const app = new App();
const stage = String(app.node.tryGetContext('stage') ?? 'dev');
const stages = (app.node.tryGetContext('stages') ?? {}) as Record<string, unknown>;
const account = app.node.tryGetContext('account') as string | undefined;
const region = app.node.tryGetContext('region') as string | undefined;

new SqsInboxWorkerStack(app, `SqsInboxWorker-${stage}`, {
  description: `sqs-inbox-worker (${stage}): SQS → Lambda → PostgreSQL with exactly-once effects`,
  env: account || region ? { account, region } : undefined,
  worker: stageSettings(stage, stages[stage]),
  tags: { project: 'sqs-inbox-worker', stage },
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
