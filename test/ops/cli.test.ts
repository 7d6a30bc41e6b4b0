import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync, statSync, utimesSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createTestDatabase } from '../support/database.ts';
import { createQueues, depth, paymentEnvelope, seedInbox, sendAll, startOpsSqs } from './ops-fixture.ts';

const db = await createTestDatabase();
const { sqs, endpoint } = await startOpsSqs();
const CLI = fileURLToPath(new URL('../../bin/sqs-worker.js', import.meta.url));

/** Runs the real CLI entry as a subprocess with only the given environment (plus PATH/HOME). */
function runCli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      {
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '',
          AWS_ACCESS_KEY_ID: 'local',
          AWS_SECRET_ACCESS_KEY: 'local',
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
          ...env,
        },
        timeout: 30_000,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

describe('CLI: bin/sqs-worker.js', () => {
  it('redrives --max 3 of 10 with settings from the environment and prints JSON (exit 0)', async () => {
    // Prepare
    const { queueUrl, dlqUrl } = await createQueues(sqs);
    const envelopes = Array.from({ length: 10 }, (_, i) => paymentEnvelope(i));
    await seedInbox(db.sql, envelopes[0], {
      status: 'FAILED_TERMINAL',
      failureCode: 'ACCOUNT_CLOSED',
    });
    await sendAll(sqs, dlqUrl, envelopes);
    const env = {
      DATABASE_URL: db.url,
      WORKER_QUEUE_URL: queueUrl,
      WORKER_DLQ_URL: dlqUrl,
      SQS_ENDPOINT: endpoint,
      AWS_REGION: 'us-east-1',
    };

    // Act
    const peek = await runCli(['dlq', 'peek', '--max', '10', '--json'], env);
    const redrive = await runCli(['dlq', 'redrive', '--max', '3', '--rate', '50/s', '--json'], env);

    // Assess
    expect(peek.code).toBe(0);
    expect(JSON.parse(peek.stdout)).toMatchObject({ peeked: 10 });
    expect(redrive.code).toBe(0);
    expect(JSON.parse(redrive.stdout)).toMatchObject({ moved: 3, dryRun: false, ratePerSecond: 50 });
    expect(await depth(sqs, dlqUrl)).toEqual({ visible: 7, inFlight: 0 });
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 3, inFlight: 0 });
    const [audit] =
      await db.sql`select count(*)::int as n from ops_audit where source_queue = ${dlqUrl} and outcome = 'DONE'`;
    expect(audit?.n).toBe(3);
  });

  it('exits 2 naming the flag and the variable when a setting is missing', async () => {
    // Act
    const result = await runCli([
      'dlq',
      'redrive',
      '--max',
      '1',
      '--json',
      '--database-url',
      db.url,
      '--sqs-endpoint',
      endpoint,
    ]);

    // Assess
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stdout)).toEqual({
      error: {
        type: 'UsageError',
        message:
          'Missing setting for "dlq redrive": the URL of the dead-letter queue. Pass --dlq-url <value> or set WORKER_DLQ_URL.',
        exitCode: 2,
      },
    });
    expect(result.stderr).toContain('--dlq-url');
  });

  it('exits 2 on a bad flag and 1 when the operation fails; flags override the environment', async () => {
    // Act
    // Every setting is present, so only the bad --max can fail the command.
    const badFlag = await runCli(['dlq', 'redrive', '--max', 'lots'], {
      DATABASE_URL: db.url,
      WORKER_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/cli-source',
      WORKER_DLQ_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/cli-source-dlq',
      AWS_REGION: 'us-east-1',
    });
    const unknownOption = await runCli(['inbox', 'stats', '--bogus']);
    const failed = await runCli(['inbox', 'show', 'no-such-key', '--database-url', db.url], {
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/x',
    });
    const stats = await runCli([
      'inbox',
      'stats',
      '--consumer',
      'nobody',
      '--json',
      '--database-url',
      db.url,
    ]);

    // Assess
    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).toContain(
      'sqs-worker dlq redrive: --max must be a whole number from 1 to 100000 (given "lots")',
    );
    expect(unknownOption.code).toBe(2);
    expect(unknownOption.stderr).toContain("unknown option '--bogus'");
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('No inbox row or quarantine entry for idempotency key "no-such-key"');
    expect(stats.code).toBe(0);
    expect(JSON.parse(stats.stdout)).toMatchObject({ consumer: 'nobody', byStatus: { COMPLETED: 0 } });
  });

  it('exits 2 with the help on stderr for a command without its subcommand, 0 for --help', async () => {
    // Act
    const incomplete = await runCli(['dlq']);
    const nested = await runCli(['dlq', 'move-task']);
    const help = await runCli(['dlq', '--help']);
    const helpCommand = await runCli(['help', 'dlq']);

    // Assess
    expect(incomplete.code).toBe(2);
    expect(incomplete.stderr).toContain('Usage: sqs-worker dlq [options] [command]');
    expect(incomplete.stdout).toBe('');
    expect(nested.code).toBe(2);
    expect(nested.stderr).toContain('Usage: sqs-worker dlq move-task [options] [command]');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: sqs-worker dlq [options] [command]');
    expect(helpCommand.code).toBe(0);
    expect(helpCommand.stdout).toContain('Usage: sqs-worker dlq [options] [command]');
  });

  it('prints the package version for --version and -V (exit 0)', async () => {
    // Prepare
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));

    // Act
    const long = await runCli(['--version']);
    const short = await runCli(['-V']);

    // Assess
    expect(long.code).toBe(0);
    expect(long.stdout.trim()).toBe(version);
    expect(short.stdout.trim()).toBe(version);
  });

  it("lists the global flags in every command's help", async () => {
    // Act
    const peek = await runCli(['dlq', 'peek', '--help']);
    const show = await runCli(['help', 'inbox', 'show']);

    // Assess
    for (const help of [peek, show]) {
      expect(help.code).toBe(0);
      expect(help.stdout).toContain('Global Options:');
      expect(help.stdout).toMatch(/--json\s+print one JSON document/);
      expect(help.stdout).toMatch(/--database-url <url>\s+PostgreSQL connection URL/);
    }
  });

  it('exits 2 for an unknown command, at the top and under a command', async () => {
    // Act
    const top = await runCli(['bogus']);
    const nested = await runCli(['dlq', 'bogus']);

    // Assess
    expect(top.code).toBe(2);
    expect(top.stderr).toContain("error: unknown command 'bogus'");
    expect(nested.code).toBe(2);
    expect(nested.stderr).toContain("error: unknown command 'bogus'");
  });

  it("uses the AWS SDK's AWS_ENDPOINT_URL_SQS and AWS_ENDPOINT_URL as the SQS endpoint, never CloudWatch", async () => {
    // Prepare
    const { queueUrl, dlqUrl } = await createQueues(sqs);
    const env = { WORKER_QUEUE_URL: queueUrl, WORKER_DLQ_URL: dlqUrl, AWS_REGION: 'us-east-1' };

    // Act
    const serviceSpecific = await runCli(['queue', 'status', '--json'], {
      ...env,
      AWS_ENDPOINT_URL_SQS: endpoint,
    });
    const global = await runCli(['queue', 'status', '--json'], { ...env, AWS_ENDPOINT_URL: endpoint });
    const invalid = await runCli(['queue', 'status'], { ...env, AWS_ENDPOINT_URL_SQS: 'localhost:4566' });

    // Assess
    for (const result of [serviceSpecific, global]) {
      expect(result.stderr).not.toMatch(/monitoring|Invalid URL/);
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ source: { visible: 0 } });
    }
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain(
      'AWS_ENDPOINT_URL_SQS must be an http(s) URL such as http://127.0.0.1:4566 (given "localhost:4566"); fix it or unset it to use AWS',
    );
  });

  it('runs the bundle in dist/cli, not TypeScript compiled at every run: later runs leave the bundle untouched', async () => {
    // Prepare: the first run builds the bundle when a source is newer.
    await runCli(['--help']);
    const bundle = new URL('../../dist/cli/sqs-worker.mjs', import.meta.url);
    const builtAt = statSync(bundle).mtimeMs;

    // Act
    const results = [await runCli(['--help']), await runCli(['--help'])];

    // Assess: each run answered from the same bundle (a rebuild would rewrite it).
    for (const result of results) expect(result.code).toBe(0);
    expect(statSync(bundle).mtimeMs).toBe(builtAt);
  });

  it('rebuilds the bundle when a source is newer than it, so the CLI never runs stale code', async () => {
    // Prepare: a source edited after the last build.
    await runCli(['--version']);
    const inputs = new URL('../../dist/cli/inputs.json', import.meta.url);
    const builtBefore = statSync(inputs).mtimeMs;
    const source = new URL('../../tools/ops/parse-duration.ts', import.meta.url);
    const later = new Date(builtBefore + 2000);
    utimesSync(source, later, later);

    // Act
    const result = await runCli(['--version']);

    // Assess
    expect(result.code).toBe(0);
    expect(statSync(inputs).mtimeMs).toBeGreaterThanOrEqual(later.getTime());
  });

  it('refuses a quarantine release behind newer events with the list as JSON data (exit 1), releases with --force', async () => {
    // Prepare
    const { queueUrl } = await createQueues(sqs);
    const caseId = `C-cli-${process.pid}`;
    const deadline = paymentEnvelope(0, {
      messageType: 'CaseDeadlineRequested',
      aggregateType: 'case',
      aggregateId: caseId,
      idempotencyKey: `case:${caseId}:deadline:1`,
    });
    const stage = paymentEnvelope(1, {
      messageType: 'CaseStageChanged',
      aggregateType: 'case',
      aggregateId: caseId,
      idempotencyKey: `case:${caseId}:stage:v2`,
    });
    await seedInbox(db.sql, deadline, { status: 'FAILED_TERMINAL', failureCode: 'CASE_NOT_FOUND' });
    await seedInbox(db.sql, stage, { status: 'COMPLETED', firstSeenAt: new Date(Date.now() + 1_000) });
    const body = JSON.stringify(deadline);
    const [row] = await db.sql<{ id: string }[]>`
      insert into worker_quarantine (consumer, body_hash, body, idempotency_key, message_type, reason_code, reason_message)
      values ('case-worker', ${createHash('sha256').update(body).digest('hex')}, ${body},
        ${deadline.idempotencyKey}, 'CaseDeadlineRequested', 'CASE_NOT_FOUND', 'seeded')
      returning quarantine_id::text as id
    `;
    const id = row.id;
    const env = {
      DATABASE_URL: db.url,
      WORKER_QUEUE_URL: queueUrl,
      SQS_ENDPOINT: endpoint,
      AWS_REGION: 'us-east-1',
    };

    // Act
    const show = await runCli(['quarantine', 'show', id, '--json'], env);
    const refused = await runCli(['quarantine', 'release', id, '--json'], env);
    const depthAfterRefusal = await depth(sqs, queueUrl);
    const forced = await runCli(['quarantine', 'release', id, '--force', '--json'], env);
    const help = await runCli(['quarantine', 'release', '--help']);

    // Assess
    expect(show.code).toBe(0);
    expect(JSON.parse(show.stdout)).toMatchObject({ aggregateId: caseId, newerCompletedEvents: 1 });
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({
      error: {
        type: 'OutOfOrderReleaseError',
        exitCode: 1,
        data: {
          quarantineId: id,
          aggregate: { type: 'case', id: caseId, source: 'inbox' },
          newerCompletedEvents: 1,
          newerEvents: [{ messageType: 'CaseStageChanged', idempotencyKey: `case:${caseId}:stage:v2` }],
        },
      },
    });
    expect(refused.stderr).toContain('re-run with --force');
    expect(refused.stdout + refused.stderr).not.toContain('ACC-1');
    expect(depthAfterRefusal).toEqual({ visible: 0, inFlight: 0 });
    expect(forced.code).toBe(0);
    expect(JSON.parse(forced.stdout)).toMatchObject({ forced: true, newerCompletedEvents: 1 });
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 1, inFlight: 0 });
    expect(help.stdout).toContain('--force');
  });

  it('console: exits 2 naming a bad --port, and serves its URL until SIGTERM, then exits 0', async () => {
    // Act
    const badPort = await runCli(['console', '--port', '70000', '--database-url', db.url]);
    const child = spawn(process.execPath, [CLI, 'console', '--json', '--database-url', db.url], {
      env: { ...process.env, SQS_ENDPOINT: endpoint, WORKER_QUEUE_URL: `${endpoint}/000000000000/none` },
    });
    const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
    const { url } = JSON.parse(line) as { url: string };
    const first = await fetch(url, { redirect: 'manual' });
    const cookie = (first.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const page = await fetch(`${new URL(url).origin}/`, { headers: { cookie } });
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');

    // Assess
    expect(badPort.code).toBe(2);
    expect(badPort.stderr).toContain(
      '--port takes a port number from 0 (any free port) to 65535 (given "70000")',
    );
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{43}$/);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<h2>Queue now</h2>');
    expect(code).toBe(0);
  });

  it('computes capacity without a database or queue', async () => {
    // Act
    const result = await runCli([
      'capacity',
      '--db-max-connections',
      '90',
      '--db-reserved-connections',
      '10',
      '--json',
    ]);

    // Assess
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ safeConcurrency: 80, binding: 'db_connections' });
  });
});
