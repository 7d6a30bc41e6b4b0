import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../tools/ops/errors.ts';
import { resolveOpsSettings } from '../../tools/ops/ops-settings.ts';
import { readStage } from '../../tools/ops/read-stage.ts';
import { resolveSmokeTarget } from '../../tools/ops/smoke-command.ts';
import { readStackOutputs } from '../../tools/ops/stack-outputs.ts';

const OUTPUTS = {
  QueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/worker',
  DeadLetterQueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/worker-dlq',
  EventSourceMappingUuid: '6f1c7a9e-0000-4000-8000-00000000e5a1',
  AlarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:alarms',
  ProxyEndpoint: 'workerproxy1a2b.proxy-abcdefghijkl.eu-west-1.rds.amazonaws.com',
};

describe('Function: readStage() — the facts of a cdk.json stage the ops CLI needs', () => {
  it("reads the repository's stages, with the construct's defaults for what they leave out", () => {
    // Act
    const dev = readStage('dev');
    const dynamodb = readStage('dev-dynamodb');
    const fargate = readStage('fargate');

    // Assess
    expect(dev).toEqual({
      name: 'dev',
      stackName: 'SqsInboxWorker-dev',
      store: 'postgres',
      runtime: 'lambda',
      consumer: undefined,
      workerDbUser: 'sqs_worker',
      alarmsNone: true,
      terminalPolicy: 'quarantine',
    });
    expect(dynamodb.store).toBe('dynamodb');
    expect(fargate.runtime).toBe('fargate');
    expect(readStage('prod').alarmsNone).toBe(false);
  });

  it('refuses a stage that is not in cdk.json, naming the ones that are', () => {
    // Prepare
    const folder = mkdtempSync(join(tmpdir(), 'stage-'));
    const path = join(folder, 'cdk.json');
    writeFileSync(path, JSON.stringify({ context: { stages: { dev: {}, prod: {} } } }));

    // Act / Assess
    expect(() => readStage('staging', path)).toThrow(UsageError);
    expect(() => readStage('staging', path)).toThrow(
      /Stage "staging" is not in .*cdk.json \(context.stages has dev, prod\)/,
    );
    expect(() => readStage('dev', join(folder, 'missing.json'))).toThrow(
      /Run sqs-worker smoke in the folder of your cdk.json/,
    );
  });
});

describe('Function: resolveSmokeTarget() — flag, variable, stack output, stage, default', () => {
  it('takes the stack outputs in AWS, a flag or variable over an output, and the proxy name from its endpoint', () => {
    // Prepare
    const env = { WORKER_DLQ_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/other-dlq' };

    // Act
    const target = resolveSmokeTarget({
      stage: readStage('prod'),
      settings: resolveOpsSettings({}, env),
      flags: {},
      env,
      outputs: OUTPUTS,
      options: {},
    });

    // Assess
    expect(target).toMatchObject({
      local: false,
      queueUrl: OUTPUTS.QueueUrl,
      dlqUrl: env.WORKER_DLQ_URL,
      consumer: 'case-worker',
      store: 'postgres',
      mappingUuid: OUTPUTS.EventSourceMappingUuid,
      alarmTopicArn: OUTPUTS.AlarmTopicArn,
      proxyName: 'workerproxy1a2b',
      workerDbUser: 'sqs_worker',
    });
  });

  it('refuses a WORKER_STORE of another store than the stage, and a run without a queue URL', () => {
    // Prepare
    const local = { SQS_ENDPOINT: 'http://127.0.0.1:4566', WORKER_STORE: 'dynamodb' };
    const resolve = (env: Record<string, string>) =>
      resolveSmokeTarget({
        stage: readStage('dev'),
        settings: resolveOpsSettings({}, env),
        flags: {},
        env,
        outputs: {},
        options: {},
      });

    // Act / Assess
    expect(() => resolve(local)).toThrow(
      /Stage dev is a postgres stage, but --store \/ WORKER_STORE is "dynamodb"/,
    );
    expect(() => resolve({ SQS_ENDPOINT: 'http://127.0.0.1:4566' })).toThrow(
      /set WORKER_QUEUE_URL \(npm start -- --keep prints it\)/,
    );
  });
});

describe('Function: readStackOutputs()', () => {
  it("returns a stack's outputs by key, and names the stack and the fix when CloudFormation refuses", async () => {
    // Prepare: CloudFormation's DescribeStacks (control plane).
    const reader = (fail: boolean) => ({
      send: async (command: DescribeStacksCommand) => {
        if (fail)
          throw Object.assign(new Error(`Stack with id ${command.input.StackName} does not exist`), {
            name: 'ValidationError',
          });
        return {
          Stacks: [
            {
              Outputs: Object.entries(OUTPUTS).map(([OutputKey, OutputValue]) => ({
                OutputKey,
                OutputValue,
              })),
            },
          ],
        };
      },
    });

    // Act
    const outputs = await readStackOutputs(reader(false) as never, 'SqsInboxWorker-prod');
    const refused = readStackOutputs(reader(true) as never, 'SqsInboxWorker-prod');

    // Assess
    expect(outputs).toEqual(OUTPUTS);
    await expect(refused).rejects.toThrow(
      /Cannot read the outputs of stack SqsInboxWorker-prod: ValidationError: .*Deploy it first/,
    );
  });
});
