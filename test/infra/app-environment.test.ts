import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { stackEnvironment } from '../../lib/stack-environment.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('Function: stackEnvironment()', () => {
  it('takes -c account/region first, then CDK_DEFAULT_ACCOUNT/CDK_DEFAULT_REGION, else environment-agnostic', () => {
    // Prepare
    const cli = { CDK_DEFAULT_ACCOUNT: '111111111111', CDK_DEFAULT_REGION: 'eu-west-1' };

    // Act & Assess
    expect(stackEnvironment('222222222222', 'us-east-2', cli)).toEqual({
      account: '222222222222',
      region: 'us-east-2',
    });
    expect(stackEnvironment(undefined, undefined, cli)).toEqual({
      account: '111111111111',
      region: 'eu-west-1',
    });
    expect(stackEnvironment(undefined, 'us-east-2', { CDK_DEFAULT_ACCOUNT: '111111111111' })).toEqual({
      account: '111111111111',
      region: 'us-east-2',
    });
    expect(stackEnvironment(undefined, undefined, {})).toBeUndefined();
  });
});

describe('CDK app: bin/app.ts', () => {
  it('synthesizes the stack into the account and region the CDK CLI exports', async () => {
    // Prepare: what `cdk synth` passes to the app: cdk.json's context and the CLI's defaults; bundling skipped.
    const outdir = mkdtempSync(join(tmpdir(), 'cdk-app-env-'));
    const { context } = JSON.parse(readFileSync(join(ROOT, 'cdk.json'), 'utf8')) as { context: object };

    // Act
    const code = await new Promise<number>((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', 'bin/app.ts'],
        {
          cwd: ROOT,
          env: {
            PATH: process.env.PATH ?? '',
            HOME: process.env.HOME ?? '',
            CDK_OUTDIR: outdir,
            CDK_CONTEXT_JSON: JSON.stringify({ ...context, 'aws:cdk:bundling-stacks': [] }),
            CDK_DEFAULT_ACCOUNT: '123456789012',
            CDK_DEFAULT_REGION: 'eu-west-1',
          },
          timeout: 120_000,
        },
        (error) => resolve(error ? Number(error.code ?? 1) : 0),
      );
    });
    const manifest = JSON.parse(readFileSync(join(outdir, 'manifest.json'), 'utf8')) as {
      artifacts: Record<string, { environment?: string }>;
    };
    rmSync(outdir, { recursive: true, force: true });

    // Assess
    expect(code).toBe(0);
    expect(manifest.artifacts['SqsInboxWorker-dev']?.environment).toBe('aws://123456789012/eu-west-1');
  }, 150_000);
});
