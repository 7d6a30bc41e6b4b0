import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleOptions, PROJECT_ROOT } from '../../lib/bundled-function.ts';

/**
 * Runs `index.mjs` of `dir` in a fresh `node` process with only `env` (and PATH) and returns what it printed.
 */
function run(dir: string, env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(dir, 'index.mjs')], {
      env: { PATH: process.env.PATH ?? '', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(stdout.trim()) : reject(new Error(`exited ${code}: ${stderr}`)),
    );
  });
}

// The Lambda bundles replace the credential providers a Lambda function never reaches by stubs
// (lib/lambda-credential-stub.ts, lib/credential-providers-stub.ts). The RDS signer resolves its credentials through
// `fromNodeProviderChain` of `@aws-sdk/credential-providers`: bundled here with the stack's options, it must still
// find the environment's credentials (Lambda's), and past the stubbed providers, the container's.
describe('Lambda bundles: the credential providers', () => {
  let dir: string;
  let inputs: string[];
  const container = createServer((_request, response) => {
    response.setHeader('content-type', 'application/json');
    response.end(
      JSON.stringify({
        AccessKeyId: 'AKIDCONTAINER',
        SecretAccessKey: 'container-secret',
        Token: 'container-token',
        Expiration: new Date(Date.now() + 3_600_000).toISOString(),
      }),
    );
  });
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bundle-credentials-'));
    // The stack's options with an entry of its own, given as stdin.
    const { entryPoints: _entry, ...options } = bundleOptions(
      join(PROJECT_ROOT, 'credentials-entry.ts'),
      dir,
    );
    const { metafile } = await build({
      ...options,
      stdin: {
        contents: `
          import { fromNodeProviderChain } from '@aws-sdk/credential-providers';
          const credentials = await fromNodeProviderChain()();
          process.stdout.write(credentials.accessKeyId);
        `,
        resolveDir: PROJECT_ROOT,
        sourcefile: 'credentials-entry.ts',
        loader: 'ts',
      },
      entryNames: 'index',
      metafile: true,
      logLevel: 'silent',
    });
    inputs = Object.keys(metafile.inputs);
    await new Promise<void>((resolve) => container.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => container.close(() => resolve())));

  it('bundles none of the SSO, config file, process, web identity, Cognito or STS providers', () => {
    expect(inputs.some((input) => input.includes('lib/credential-providers-stub.ts'))).toBe(true);
    for (const name of [
      '@aws-sdk/credential-provider-sso',
      '@aws-sdk/credential-provider-ini',
      '@aws-sdk/credential-provider-process',
      '@aws-sdk/credential-provider-web-identity',
      '@aws-sdk/credential-provider-cognito-identity',
      '@aws-sdk/nested-clients',
    ]) {
      expect(
        inputs.filter((input) => input.includes(`node_modules/${name}/`)),
        name,
      ).toEqual([]);
    }
  });

  it("resolves the environment's credentials, as Lambda sets them", async () => {
    const accessKeyId = await run(dir, {
      AWS_ACCESS_KEY_ID: 'AKIDENVIRONMENT',
      AWS_SECRET_ACCESS_KEY: 'environment-secret',
      AWS_SESSION_TOKEN: 'environment-token',
    });

    expect(accessKeyId).toBe('AKIDENVIRONMENT');
  });

  it("goes past the stubbed providers to the container's credentials, ignoring a credentials file", async () => {
    // Prepare: a credentials file the real fromIni would read first; the bundle has no fromIni.
    const home = mkdtempSync(join(tmpdir(), 'bundle-credentials-home-'));
    mkdirSync(join(home, '.aws'));
    writeFileSync(
      join(home, '.aws', 'credentials'),
      '[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = file-secret\n',
    );
    const { port } = container.address() as AddressInfo;

    // Act
    const accessKeyId = await run(dir, {
      HOME: home,
      AWS_CONTAINER_CREDENTIALS_FULL_URI: `http://127.0.0.1:${port}/credentials`,
    });

    // Assess
    expect(accessKeyId).toBe('AKIDCONTAINER');
  });
});
