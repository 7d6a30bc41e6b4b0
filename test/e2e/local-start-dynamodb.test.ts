import { execFile, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  runLocalStart,
  SCENARIO_RUN_TIMEOUT_MS,
  SCENARIO_TEST_TIMEOUT_MS,
} from '../support/local-start-run.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * PIDs of the DynamoDB Local processes listening on `port` (other test files and other checkouts run their own, on
 * other ports: only the one the child started is its to stop).
 */
const dynamoDbLocalPids = (port: string) =>
  spawnSync('pgrep', ['-f', `DynamoDBLocal.jar .*-port ${port}( |$)`], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter(Boolean);

describe('npm start -- --store dynamodb (bin/local.ts)', () => {
  it(
    'runs the scenario on DynamoDB Local, prints the summary with every check passing, leaves no java behind',
    async () => {
      // Prepare: fauxqs and DynamoDB Local run in the child.
      const env = { ...process.env, SQS_ENDPOINT: '', DATABASE_URL: '' };

      // Act
      const { stdout, stderr } = await runLocalStart(
        ['--store', 'dynamodb', '--messages', '60', '--concurrency', '3'],
        { env, timeoutMs: SCENARIO_RUN_TIMEOUT_MS },
      );

      // Assess
      expect(stderr).toMatch(/DynamoDB Local at http:\/\/127\.0\.0\.1:\d+, table case-worker/);
      expect(stderr).not.toContain('PostgreSQL');
      expect(stdout).toMatch(/Run r[0-9a-f]{6}: \d+ messages sent/);
      for (const section of [
        'Worker outcome',
        'Inbox status',
        'Quarantine reason',
        'DLQ',
        'Effects',
        'Check',
      ]) {
        expect(stdout).toContain(section);
      }
      expect(stdout.match(/│ PASS /g)).toHaveLength(7);
      expect(stdout).not.toMatch(/│ FAIL /);
      expect(stdout).toMatch(/│ IDEMPOTENCY_HASH_MISMATCH +│ 1 +│/);
      // The server the child started (its port is in the log line) is gone with the child.
      const port = /DynamoDB Local at http:\/\/127\.0\.0\.1:(\d+)/.exec(stderr)?.[1];
      expect(port).toMatch(/^\d+$/);
      expect(dynamoDbLocalPids(port as string)).toEqual([]);
    },
    SCENARIO_TEST_TIMEOUT_MS,
  );

  it('refuses --handlers with --store dynamodb before starting anything (exit 2)', async () => {
    const run = promisify(execFile)(
      process.execPath,
      [
        '--import',
        'tsx',
        'bin/local.ts',
        '--store',
        'dynamodb',
        '--handlers',
        'test/fixtures/handlers-modules/ping.ts',
      ],
      { cwd: root, env: process.env, timeout: 30_000 },
    );
    await expect(run).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--store dynamodb runs the scenario only'),
    });
  });
});
