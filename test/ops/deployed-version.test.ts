import {
  GetEventSourceMappingCommand,
  GetFunctionConfigurationCommand,
  type GetFunctionConfigurationCommandInput,
} from '@aws-sdk/client-lambda';
import { describe, expect, it } from 'vitest';
import { type FunctionReader, readDeployedVersion } from '../../tools/ops/deployed-version.ts';
import { OperationError } from '../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { queueStatus } from '../../tools/ops/queue-status.ts';
import { createQueues, fastClock, startOpsSqs } from './ops-fixture.ts';

/** Lambda's control plane as a scripted double: the mapping's function, and that function's configuration. */
function scriptedLambda(variables: Record<string, string> | undefined, fail?: Error) {
  const configurations: GetFunctionConfigurationCommandInput[] = [];
  const lambda: FunctionReader = {
    send: (async (command: unknown) => {
      if (fail) throw fail;
      if (command instanceof GetEventSourceMappingCommand) {
        return { FunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:case-worker' };
      }
      if (command instanceof GetFunctionConfigurationCommand) {
        configurations.push(command.input);
        return {
          FunctionName: 'case-worker',
          Version: '$LATEST',
          LastModified: '2026-07-06T14:02:11.000+0000',
          ...(variables ? { Environment: { Variables: variables } } : {}),
        };
      }
      throw new Error(`unexpected command ${(command as object).constructor.name}`);
    }) as FunctionReader['send'],
  };
  return { lambda, configurations };
}

describe('Function: readDeployedVersion()', () => {
  it("reads the WORKER_VERSION of the mapping's function", async () => {
    // Prepare
    const { lambda, configurations } = scriptedLambda({ WORKER_VERSION: '3f9c2a1b7d4e' });

    // Act
    const version = await readDeployedVersion({ kind: 'lambda', lambda, mappingUuid: 'uuid-1' });

    // Assess
    expect(configurations).toEqual([
      { FunctionName: 'arn:aws:lambda:eu-west-1:123456789012:function:case-worker' },
    ]);
    expect(version).toEqual({
      version: '3f9c2a1b7d4e',
      from: 'case-worker',
      lastModified: '2026-07-06T14:02:11.000+0000',
    });
  });

  it('resolves a function without the variable as the function does, and names the fix when refused', async () => {
    // Act
    const unnamed = await readDeployedVersion({
      kind: 'lambda',
      lambda: scriptedLambda(undefined).lambda,
      functionName: 'case-worker',
    });
    const none = await readDeployedVersion({ kind: 'lambda', lambda: scriptedLambda(undefined).lambda });
    const refused = readDeployedVersion({
      kind: 'lambda',
      lambda: scriptedLambda(undefined, Object.assign(new Error('denied'), { name: 'AccessDeniedException' }))
        .lambda,
      functionName: 'case-worker',
    });

    // Assess
    expect(unnamed?.version).toBe('case-worker:$LATEST');
    expect(none).toBeUndefined();
    await expect(refused).rejects.toThrow(OperationError);
    await expect(refused).rejects.toThrow('lambda:GetFunctionConfiguration');
  });
});

describe('Function: queueStatus() — the worker version', () => {
  it("shows the local stack's version, and the deployed function's", async () => {
    // Prepare
    const { sqs } = await startOpsSqs();
    const { queueUrl } = await createQueues(sqs, {});
    const local = createMemoryOutput();
    const aws = createMemoryOutput();

    // Act
    const localResult = await queueStatus(
      { sqs, out: local, clock: fastClock(), version: { kind: 'local', version: 'local-fbf2f462a0b6' } },
      { queueUrl, consumer: 'case-worker' },
    );
    const awsResult = await queueStatus(
      {
        sqs,
        out: aws,
        clock: fastClock(),
        version: {
          kind: 'lambda',
          lambda: scriptedLambda({ WORKER_VERSION: '3f9c2a1b7d4e' }).lambda,
          functionName: 'case-worker',
        },
      },
      { queueUrl, consumer: 'case-worker' },
    );

    // Assess
    expect(localResult.workerVersion).toEqual({ version: 'local-fbf2f462a0b6', from: 'local stack' });
    expect(local.stdout()).toContain('Worker version: local-fbf2f462a0b6 (local stack)');
    expect(awsResult.workerVersion?.version).toBe('3f9c2a1b7d4e');
    expect(aws.stdout()).toContain(
      'Worker version: 3f9c2a1b7d4e (case-worker, last modified 2026-07-06T14:02:11.000+0000)',
    );
  });
});
