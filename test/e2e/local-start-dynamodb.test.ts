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

describe('npm start -- --store dynamodb (bin/local.ts), through either runtime', () => {
  it.each([
    {
      runtime: 'event-source-mapping',
      component: 'Worker function (stage dev-dynamodb)',
      section: 'Event source mapping',
      extra: [],
      checks: 9,
    },
    // With the payload-memory case too: one payloadRef of 1 MiB after the drain, within the task's limit (a check).
    {
      runtime: 'poller',
      component: 'Poller task (stage fargate-dynamodb)',
      section: 'Poller',
      extra: ['--payload-mib', '1'],
      checks: 10,
    },
  ])(
    'runs the scenario on DynamoDB Local with --runtime $runtime, prints the summary with every check passing and no IAM refusal, leaves no java behind',
    async ({ runtime, component, section, extra, checks }) => {
      // Prepare: fauxqs and DynamoDB Local run in the child.
      const env = { ...process.env, SQS_ENDPOINT: '', DATABASE_URL: '' };

      // Act: the poller is the real bin/poller.ts in a task process of its own, with its task role's key
      const { stdout, stderr } = await runLocalStart(
        ['--store', 'dynamodb', '--runtime', runtime, '--messages', '60', '--concurrency', '3', ...extra],
        { env, timeoutMs: SCENARIO_RUN_TIMEOUT_MS },
      );

      // Assess
      expect(stderr).toMatch(/DynamoDB Local at http:\/\/127\.0\.0\.1:\d+, table case-worker/);
      expect(stderr).toContain(component);
      expect(stderr).not.toContain('PostgreSQL');
      expect(stdout).toMatch(/Run r[0-9a-f]{6}: \d+ messages sent/);
      for (const heading of [
        'Worker outcome',
        'Inbox status',
        'Quarantine reason',
        'DLQ',
        'Effects',
        'Payloads by reference (S3)',
        section,
        'Check',
      ]) {
        expect(stdout).toContain(heading);
      }
      expect(stdout.match(/│ PASS /g)).toHaveLength(checks);
      if (extra.length > 0) {
        expect(stdout).toMatch(
          /a payloadRef at the stack's limit is +│ PASS +│ 1 MiB \(limit 8 MiB\): completed/,
        );
      }
      // The producer side: outbox items relayed from the table's stream.
      expect(stdout).toMatch(/every outbox event is published by the +│ PASS/);
      expect(stdout).not.toMatch(/│ FAIL /);
      expect(stdout).toMatch(/│ IDEMPOTENCY_HASH_MISMATCH +│ 1 +│/);
      // The payloadRef cases: two documents stored from S3 (one delivered twice), the big payment offloaded by the
      // producer's dynamoOutboxWrite and applied, the wrong checksum and the missing object quarantined.
      expect(stdout).toMatch(
        /referenced payloads: verified before the +│ PASS +│ 2 documents, 1 outbox event offloaded to S3, 2 bad/,
      );
      expect(stdout).toMatch(/│ documents \(from referenced documents\) +│ 2 +│/);
      expect(stdout).toMatch(/│ outbox events offloaded to S3 \(over 1 MiB\) +│ 1 +│/);
      expect(stdout).toMatch(/│ PAYLOAD_CHECKSUM_MISMATCH +│ 1 +│/);
      expect(stdout).toMatch(/│ PAYLOAD_NOT_FOUND +│ 1 +│/);
      // Every call of the worker (or the poller) was allowed by its synthesized role.
      expect(stderr).toContain("IAM: every call was allowed by the synthesized stack's roles (0 refused)");
      // The server the child started (its port is in the log line) is gone with the child.
      const port = /DynamoDB Local at http:\/\/127\.0\.0\.1:(\d+)/.exec(stderr)?.[1];
      expect(port).toMatch(/^\d+$/);
      expect(dynamoDbLocalPids(port as string)).toEqual([]);
    },
    SCENARIO_TEST_TIMEOUT_MS,
  );

  it('refuses --runtime poller with more than 10 records in flight on DynamoDB before starting anything (exit 2)', async () => {
    const run = promisify(execFile)(
      process.execPath,
      [
        '--import',
        'tsx',
        'bin/local.ts',
        '--store',
        'dynamodb',
        '--runtime',
        'poller',
        '--concurrency',
        '11',
      ],
      { cwd: root, env: process.env, timeout: 30_000 },
    );
    await expect(run).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining(
        "--concurrency (11) is the poller's records in flight, and the DynamoDB store runs at most 10 at once",
      ),
    });
  });
});
