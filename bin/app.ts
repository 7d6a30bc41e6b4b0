#!/usr/bin/env node
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { SqsInboxWorkerStack, stackEnvironment, stageSettings } from '../lib/index.ts';

// CDK app: `npx cdk synth -c stage=prod`. Stage settings live in cdk.json (context.stages). The stack's account
// and region come from `-c account=… -c region=…`, else from the CDK CLI's CDK_DEFAULT_ACCOUNT / CDK_DEFAULT_REGION
// (your credentials and profile); with neither it is environment-agnostic, so synth needs no AWS credentials.
const app = new App();
const stage = String(app.node.tryGetContext('stage') ?? 'dev');
const stages = (app.node.tryGetContext('stages') ?? {}) as Record<string, unknown>;

const worker = stageSettings(stage, stages[stage]);

new SqsInboxWorkerStack(app, `SqsInboxWorker-${stage}`, {
  description: `sqs-inbox-worker (${stage}): SQS → Lambda → ${worker.store === 'dynamodb' ? 'DynamoDB' : 'PostgreSQL'} with exactly-once effects`,
  env: stackEnvironment(app.node.tryGetContext('account'), app.node.tryGetContext('region')),
  worker,
  tags: { project: 'sqs-inbox-worker', stage },
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
