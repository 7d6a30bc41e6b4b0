import { describe, expect, it } from 'vitest';
import { stageCompute } from '../../tools/local/stack-compute.ts';
import { createTestDatabase } from '../support/database.ts';
import {
  runLocalStart,
  SCENARIO_RUN_TIMEOUT_MS,
  SCENARIO_TEST_TIMEOUT_MS,
} from '../support/local-start-run.ts';

const db = await createTestDatabase();

/**
 * The contention case passed (its row of the checks names what moved), and in the database the locked case's 30
 * stage changes completed, once each.
 */
async function expectContentionCase(stdout: string, moved: string) {
  expect(stdout).toMatch(
    new RegExp(`│ the adaptive limit drops under contention +│ PASS +│ ${moved.replace(/[()]/g, '\\$&')}`),
  );
  const runId = /Run (r[0-9a-f]{6}):/.exec(stdout)?.[1];
  expect(runId).toBeDefined();
  const [hot] = await db.sql<{ n: number; keys: number }[]>`
    select count(*)::int as n, count(distinct idempotency_key)::int as keys from worker_inbox
    where idempotency_key like ${`contention-${runId}:hot:%`} and status = 'COMPLETED'`;
  expect(hot).toEqual({ n: 30, keys: 30 });
}

describe('npm start (bin/local.ts)', () => {
  it(
    'runs the scenario through fauxqs and the real worker, prints the summary with every check passing, exits 0',
    async () => {
      // Prepare: the test's database stands in for the embedded one (DATABASE_URL), fauxqs runs in the child.
      const env = { ...process.env, DATABASE_URL: db.url, SQS_ENDPOINT: '' };

      // Act
      const { stdout, stderr } = await runLocalStart(['--messages', '60', '--concurrency', '3'], {
        env,
        timeoutMs: SCENARIO_RUN_TIMEOUT_MS,
      });

      // Assess
      expect(stderr).toContain('migrated');
      // The worker function runs within the dev stage's memory and timeout, and says so; the summary has its peaks.
      const worker = await stageCompute('dev', 'worker');
      expect(stderr).toMatch(
        new RegExp(
          `^Worker function \\(stage dev\\): ${worker.memoryMb} MB \\(--max-semi-space-size=\\d+ --max-old-space-size=\\d+\\), timeout ${worker.timeoutSeconds} s, PAYLOAD_MAX_BYTES [\\d.]+ MiB; each execution environment is a child process`,
          'm',
        ),
      );
      expect(stdout).toMatch(
        new RegExp(
          `│ worker function: memory size / timeout +│ ${worker.memoryMb} MB / ${worker.timeoutSeconds} s +│`,
        ),
      );
      expect(stdout).toMatch(/│ {3}peak memory per invocation \(max \/ median\) +│ \d+ \/ \d+ MB +│/);
      expect(stdout).toMatch(/│ {3}killed for memory \(Runtime\.OutOfMemory\) +│ 0 +│/);
      expect(stdout).toMatch(/Run r[0-9a-f]{6}: \d+ messages sent/);
      for (const section of [
        'Worker outcome',
        'Inbox status',
        'Quarantine reason',
        'DLQ',
        'Payloads by reference (S3)',
        'Check',
      ]) {
        expect(stdout).toContain(section);
      }
      expect(stdout).toMatch(/│ PASS /);
      expect(stdout).not.toMatch(/│ FAIL /);
      expect(stdout).toMatch(/│ outbox events offloaded to S3 \(over 1 MiB\) +│ 1 +│/);
      // Each component as the database role the stack's migration function provisions, made by its code.
      expect(stderr).toContain(
        'each component connects as its database role (sqs_worker, sqs_outbox_relay, sqs_worker_ops, sqs_worker_health, sqs_worker_retention)',
      );
      expect(stdout).toMatch(
        /│ each component runs as its database role +│ PASS +│ worker sqs_worker, relay sqs_outbox_relay; health +│/,
      );
      // Poison 2, terminal 2, same key with another payload 1, and the two broken references.
      const rows = await db.sql`select reason_code from worker_quarantine order by reason_code`;
      expect(rows.length).toBe(7);
      expect(rows.map((r) => r.reason_code)).toEqual(
        expect.arrayContaining(['PAYLOAD_CHECKSUM_MISMATCH', 'PAYLOAD_NOT_FOUND']),
      );
      const [documents] = await db.sql`select count(*)::int as count from documents`;
      expect(documents?.count).toBe(2);
      await expectContentionCase(stdout, "the mapping's MaximumConcurrency");
    },
    SCENARIO_TEST_TIMEOUT_MS,
  );

  it(
    'with --runtime poller runs the same scenario through the long-running poller and prints its counters',
    async () => {
      // Prepare: a database of its own for this run's effects (the scenario's ids are unique per run).
      const env = { ...process.env, DATABASE_URL: db.url, SQS_ENDPOINT: '' };

      // Act
      const { stdout, stderr } = await runLocalStart(
        ['--messages', '40', '--concurrency', '3', '--runtime', 'poller'],
        { env, timeoutMs: SCENARIO_RUN_TIMEOUT_MS },
      );

      // Assess: the poller's table instead of the mapping's, its task's memory, and every check passing.
      const task = await stageCompute('fargate', 'poller');
      expect(stderr).toMatch(
        new RegExp(
          `^Poller task \\(stage fargate\\): ${task.memoryMb} MiB, PAYLOAD_MAX_BYTES [\\d.]+ MiB;`,
          'm',
        ),
      );
      expect(stdout).toMatch(new RegExp(`│ poller task: memory +│ ${task.memoryMb} MiB +│`));
      expect(stdout).toMatch(/│ {3}tasks killed for memory \(OutOfMemoryError, exit 137\) +│ 0 +│/);
      expect(stdout).toContain('│ Poller ');
      expect(stdout).toMatch(
        /│ each component runs as its database role +│ PASS +│ poller sqs_worker, relay sqs_outbox_relay; health +│/,
      );
      expect(stdout).not.toContain('Event source mapping');
      expect(stdout).toMatch(/│ deletes dropped \(crash after commit\) +│ [1-9]/);
      expect(stdout).toMatch(/│ PASS /);
      expect(stdout).not.toMatch(/│ FAIL /);
      await expectContentionCase(stdout, "the poller's records in flight");
    },
    SCENARIO_TEST_TIMEOUT_MS,
  );
});
