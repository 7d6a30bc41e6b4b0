import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createTestDatabase } from '../support/database.ts';
import { startKept } from '../support/local-start-run.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const db = await createTestDatabase();

describe('npm start -- --keep, then sqs-worker smoke with the settings it prints', () => {
  it('keeps consuming after the summary: the smoke run passes against it, and Ctrl-C stops it with exit 0', async () => {
    // Prepare: the scenario as `npm start -- --keep` runs it (the test's database for the embedded one).
    const base = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    };
    const kept = startKept(['--keep', '--messages', '20', '--concurrency', '2'], {
      ...base,
      DATABASE_URL: db.url,
    });
    let smoke: { stdout: string; code: number };
    let settings: Record<string, string> = {};
    try {
      settings = await kept.settingsPrintedBefore('npx sqs-worker smoke', 90_000);

      // Act: the ops CLI in another process, with exactly the printed settings.
      smoke = await promisify(execFile)(
        process.execPath,
        ['--import', 'tsx', 'bin/sqs-worker.ts', 'smoke', '--stage', 'dev', '--json', '--timeout', '60s'],
        { cwd: ROOT, env: { ...base, ...settings }, timeout: 120_000 },
      ).then(
        ({ stdout: out }) => ({ stdout: out, code: 0 }),
        (error: { stdout?: string; code?: number }) => ({
          stdout: error.stdout ?? '',
          code: error.code ?? -1,
        }),
      );
    } finally {
      kept.stop('SIGINT');
    }
    const code = await kept.exited;

    // Assess: the settings in the form the CLI reads, the smoke run's checks, and its state gone from the database.
    expect(Object.keys(settings)).toEqual([
      'DATABASE_URL',
      'SQS_ENDPOINT',
      'AWS_REGION',
      'WORKER_QUEUE_URL',
      'WORKER_DLQ_URL',
      'SQS_WORKER_LOG_FILE',
      'SQS_WORKER_LOCAL_VERSION',
      'AWS_ACCESS_KEY_ID',
      'AWS_SECRET_ACCESS_KEY',
    ]);
    expect(kept.stdout).toContain(
      'Check it with the canaries, as after every deploy: npx sqs-worker smoke --stage dev',
    );
    const result = JSON.parse(smoke.stdout) as {
      runId: string;
      passed: boolean;
      checks: { check: string; result: string }[];
    };
    expect(Object.fromEntries(result.checks.map((check) => [check.check, check.result]))).toEqual({
      'canary applied once': 'PASS',
      'its duplicate is a no-op': 'PASS',
      'poison canary quarantined': 'PASS',
      'never-recovering canary reaches the DLQ': 'PASS',
      'alarm topic has a confirmed subscription': 'SKIP',
      'breaker is closed': 'SKIP',
      'proxy sessions not pinned': 'PASS',
      // npm start runs the worker as its provisioned role: its privileges are compared for real.
      'worker role has no more than it needs': 'PASS',
      'canary state removed': 'PASS',
    });
    expect(smoke.code).toBe(0);
    const rows =
      await db.sql`select 1 from worker_inbox where idempotency_key like ${`canary:${result.runId}:%`}`;
    expect(rows).toEqual([]);
    expect(code, kept.stderr).toBe(0);
    expect(kept.stderr).toContain("IAM: every call was allowed by the synthesized stack's roles (0 refused)");
  }, 300_000);
});
