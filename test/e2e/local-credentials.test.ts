import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { exampleEnvelope } from '../../tools/local/example-envelope.ts';
import { queueIsEmpty } from '../../tools/local/local-queues.ts';
import { sqsClientFor } from '../../tools/local/sqs-client-for.ts';
import { createTestDatabase } from '../support/database.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { startKept } from '../support/local-start-run.ts';
import { waitFor } from '../support/wait-for.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * A child's environment as a laptop without an AWS account has it: no AWS_* variable at all (vitest.config.ts sets
 * fake ones for the test process; they are not passed on) and a HOME without ~/.aws.
 */
const bare = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH ?? '',
  HOME: mkdtempSync(join(tmpdir(), 'no-aws-home-')),
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  POWERTOOLS_METRICS_DISABLED: 'true',
  ...extra,
});

const db = await createTestDatabase({ roles: true });
const fixture = await localQueueFixture({ iam: false });
const dynamo = useTestDynamoDb();

/** Powertools JSON lines of `text`, parsed (other lines skipped). */
const logLines = (text: string) =>
  text
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { message?: string });

const runCli = (args: readonly string[], env: NodeJS.ProcessEnv) =>
  promisify(execFile)(process.execPath, ['bin/sqs-worker.js', ...args], {
    cwd: ROOT,
    env,
    timeout: 60_000,
  }).then(
    ({ stdout, stderr }) => ({ stdout, stderr, code: 0 }),
    (error: { stdout?: string; stderr?: string; code?: number }) => ({
      stdout: error.stdout ?? '',
      stderr: error.stderr ?? '',
      code: error.code ?? -1,
    }),
  );

describe('Local runs without AWS credentials or region (no AWS_* variable in the environment)', () => {
  it('npm start -- --handlers: a retryable failure comes back after its backoff (the visibility change succeeded), not after the 180 s visibility', async () => {
    // Prepare
    const own = await createTestDatabase();
    const kept = startKept(
      ['--handlers', 'test/fixtures/handlers-modules/flaky-once.ts'],
      bare({ DATABASE_URL: own.url, POWERTOOLS_LOG_LEVEL: 'WARN' }),
    );
    let row: { status: string; receive_count: number } | undefined;
    try {
      await kept.settingsPrintedBefore('aws sqs send-message', 60_000);
      const [, endpoint, region, queueUrl] =
        /--endpoint-url (\S+) --region (\S+) --queue-url (\S+)/.exec(kept.stdout) ?? [];
      expect(queueUrl, kept.stdout).toBeDefined();

      // Act: one message, failing retryably at its first attempt.
      const sqs = sqsClientFor(endpoint as string, region);
      const body = exampleEnvelope({
        messageType: 'Flaked',
        idempotencyKey: 'flaky:1',
        aggregateType: 'Flake',
        aggregateId: '1',
        payload: { n: 1 },
      });
      await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(body) }));
      sqs.destroy();
      // Its backoff is seconds; the queue's visibility (180 s) is far beyond this wait.
      await waitFor(
        'the retry completed',
        async () => {
          [row] = await own.sql<{ status: string; receive_count: number }[]>`
            select status, receive_count from worker_inbox where idempotency_key = 'flaky:1'
          `;
          return row?.status === 'COMPLETED';
        },
        60_000,
        200,
      );
    } finally {
      kept.stop('SIGINT');
    }
    const code = await kept.exited;

    // Assess: failed once, the visibility change went through, completed at the second receive; a clean stop.
    const messages = logLines(`${kept.stdout}\n${kept.stderr}`).map((line) => line.message);
    expect(messages).toContain('worker_message_retryable_failure');
    expect(messages).not.toContain('worker_visibility_change_failed');
    expect(kept.stderr).not.toMatch(/CredentialsProviderError|Region is missing/);
    expect(row).toEqual({ status: 'COMPLETED', receive_count: 2 });
    expect(code, kept.stderr).toBe(0);
  }, 150_000);

  it('bin/poller.ts consumes a local queue (SQS_ENDPOINT on loopback) without AWS_REGION or keys', async () => {
    // Prepare
    const { queueUrl } = await fixture.queues({ maxReceiveCount: 5, visibilityTimeoutSeconds: 30 });
    const key = 'poller-no-creds:1';
    await fixture.send(queueUrl, [
      JSON.stringify(
        exampleEnvelope({
          messageType: 'PaymentCaptured',
          idempotencyKey: key,
          aggregateType: 'Payment',
          aggregateId: key,
          payload: { paymentId: key, accountId: 'acct-1', amount: 10, currency: 'EUR' },
        }),
      ),
    ]);
    const child = spawn(process.execPath, ['--import', 'tsx', 'bin/poller.ts'], {
      cwd: ROOT,
      env: bare({
        POWERTOOLS_LOG_LEVEL: 'WARN',
        DATABASE_URL: db.roleUrl('worker'),
        DB_POOL_SIZE: '2',
        WORKER_QUEUE_URL: queueUrl,
        SQS_ENDPOINT: fixture.endpoint,
        POLLER_WAIT_SECONDS: '1',
      }),
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = once(child, 'exit');
    try {
      // Act
      await waitFor(
        'the payment applied',
        async () => {
          const rows = await db.sql`
            select 1 from worker_inbox where idempotency_key = ${key} and status = 'COMPLETED'
          `;
          return rows.length === 1 || child.exitCode !== null;
        },
        60_000,
        200,
      );
      await waitFor('the queue drained', () => queueIsEmpty(fixture.sqs, queueUrl), 20_000);
    } finally {
      child.kill('SIGTERM');
    }
    const [code] = await exited;

    // Assess
    const ledger = await db.sql`select 1 from ledger_entries where source_event_id = ${key}`;
    expect(ledger.length, stderr).toBe(1);
    expect(stderr).not.toMatch(/Region is missing|Could not load credentials/);
    expect(code, stderr).toBe(0);
  }, 120_000);

  it('bin/poller.ts against AWS without a region or keys stops with one line naming the variables (exit 2)', async () => {
    // Act
    const child = spawn(process.execPath, ['--import', 'tsx', 'bin/poller.ts'], {
      cwd: ROOT,
      env: bare({
        DATABASE_URL: db.roleUrl('worker'),
        WORKER_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/case-worker',
      }),
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const [code] = await once(child, 'exit');

    // Assess
    expect(code).toBe(2);
    expect(stderr.trim()).toBe(
      'poller not started: The SQS client of queue https://sqs.eu-west-1.amazonaws.com/123456789012/case-worker has no AWS region: set AWS_REGION (e.g. AWS_REGION=eu-west-1), or give a profile with a region in AWS_PROFILE',
    );
  }, 60_000);

  it('the CLI (dist bundle) reads DynamoDB Local without AWS_REGION or keys, and names the variables against AWS', async () => {
    // Prepare
    const table = await dynamo.createTable('cli-no-creds');

    // Act
    const local = await runCli(
      ['inbox', 'stats', '--store', 'dynamodb', '--dynamodb-table', table, '--json'],
      bare({ DYNAMODB_ENDPOINT: dynamo.endpoint }),
    );
    const aws = await runCli(
      ['inbox', 'stats', '--store', 'dynamodb', '--dynamodb-table', table],
      bare({ AWS_REGION: 'eu-west-1' }),
    );
    const noRegion = await runCli(
      ['queue', 'status', '--queue-url', 'https://sqs.eu-west-1.amazonaws.com/123456789012/case-worker'],
      bare(),
    );

    // Assess
    expect(local.stderr).not.toMatch(/Region is missing|Could not load credentials/);
    expect(local.code, local.stderr).toBe(0);
    expect(JSON.parse(local.stdout)).toMatchObject({ consumer: 'case-worker' });
    expect(aws.code).toBe(1);
    expect(aws.stderr.trim()).toBe(
      'sqs-worker inbox stats: The AWS SDK found no AWS credentials: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones)',
    );
    expect(noRegion.code).toBe(1);
    expect(noRegion.stderr.trim()).toBe(
      'sqs-worker queue status: The AWS SDK has no AWS region: set AWS_REGION (e.g. AWS_REGION=eu-west-1), or give a profile with a region in AWS_PROFILE',
    );
  }, 120_000);
});
