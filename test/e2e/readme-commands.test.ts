import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { sqsClientFor } from '../../tools/local/local-sqs.ts';
import { type CheckoutCopy, copyCheckout } from '../support/checkout-copy.ts';
import { createTestDatabase } from '../support/database.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** The text of the README's `## heading` section, up to the next `## ` heading. */
function section(heading: string): string {
  const start = README.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`README.md has no "## ${heading}" section`);
  const end = README.indexOf('\n## ', start + 1);
  return README.slice(start, end < 0 ? undefined : end);
}

/** The fenced ```lang blocks of `text`, in order. */
function blocks(text: string, lang: string): string[] {
  return [...text.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\\n\`\`\``, 'g'))].map((m) =>
    String(m[1]),
  );
}

/** The commands of a ```sh block: one per line (or `&&`), comments dropped. */
function commands(block: string): string[] {
  return block
    .split('\n')
    .flatMap((line) => line.replace(/\s#\s.*$/, '').split('&&'))
    .map((command) => command.trim())
    .filter(Boolean);
}

describe('Document: README.md, "Try it"', () => {
  it('documents npm ci, npm test and npm start, the scripts the test suite and the local-start e2e run', () => {
    // Prepare
    const documented = blocks(section('Try it'), 'sh').flatMap(commands);
    const scripts = (
      JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
        scripts: Record<string, string>;
      }
    ).scripts;

    // Assess: `npm ci` installs from the lock file (not run here: it replaces node_modules); `npm test` is this
    // suite; `npm start` is bin/local.ts, which test/e2e/local-start.test.ts runs through runLocalStart.
    expect(documented).toEqual(['npm ci', 'npm test', 'npm ci', 'npm start']);
    expect(existsSync(join(ROOT, 'package-lock.json'))).toBe(true);
    expect(scripts.test).toBe('vitest run');
    // The condition resolves the package's own name to its sources (lib/source-condition.ts); the suite's
    // children get it from NODE_OPTIONS (vitest.config.ts).
    expect(scripts.start).toBe('tsx --conditions=@sqs-inbox-worker/source bin/local.ts');
    expect(readFileSync(join(ROOT, 'test/support/local-start-run.ts'), 'utf8')).toContain(
      "['--import', 'tsx', 'bin/local.ts', ...args]",
    );
    expect(readFileSync(join(ROOT, 'test/e2e/local-start.test.ts'), 'utf8')).toContain('runLocalStart(');
  });
});

describe('Document: README.md, "A first handler", followed step by step', () => {
  const text = section('A first handler');
  const db = createTestDatabase();
  let copy: CheckoutCopy | undefined;
  afterAll(() => copy?.remove());

  it('creates the two files it names, runs its npm start command and the handler writes the invoice', async () => {
    // Prepare: the files the README says to save, in a copy of the checkout, at the paths it gives
    const saved = [...text.matchAll(/[Ss]ave (?:it|this) as `([^`]+)`/g)].map((m) => String(m[1]));
    const handlerFile = saved.find((path) => path.endsWith('.ts'));
    const migrationFile = saved.find((path) => path.endsWith('.sql'));
    expect(handlerFile).toBe('lambda/handlers/invoice-worker.ts');
    expect(migrationFile).toMatch(/^migrations\/\d{5}_invoices\.sql$/);
    const [handlerCode] = blocks(text, 'ts');
    const [migrationSql] = blocks(text, 'sql');
    expect(migrationSql).toContain('create table invoices');
    copy = await copyCheckout();
    for (const [path, content] of [
      [handlerFile, handlerCode],
      [migrationFile, migrationSql],
    ] as const) {
      await mkdir(dirname(join(copy.root, String(path))), { recursive: true });
      await writeFile(join(copy.root, String(path)), `${content}\n`);
    }
    const [local, deploy] = blocks(text, 'sh').map(commands);
    expect(local).toHaveLength(1);
    const [program, ...args] = String(local?.[0]).split(/\s+/);
    expect(program).toBe('npm');
    const payload = JSON.parse(String(/`"payload"` set to `(\{[^`]+\})`/.exec(text)?.[1]));
    const { url } = await db;

    // Act: the documented command, as typed, in the copy (DATABASE_URL instead of the embedded PostgreSQL)
    const child = spawn(String(program), args, {
      cwd: copy.root,
      detached: true,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        DATABASE_URL: url,
      },
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = once(child, 'exit');
    let rows: Record<string, unknown>[] = [];
    try {
      for (
        let i = 0;
        i < 600 && !output.includes('aws sqs send-message') && child.exitCode === null;
        i += 1
      ) {
        await sleep(100);
      }
      const printed =
        /aws sqs send-message --endpoint-url (\S+) --region (\S+) --queue-url (\S+) --message-body '(.+)'/.exec(
          output,
        );
      expect(printed, output.slice(-3000)).not.toBeNull();
      const [, endpoint, region, queueUrl, body] = printed as unknown as string[];
      const sqs = sqsClientFor(String(endpoint), String(region));
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: JSON.stringify({ ...JSON.parse(String(body)), payload }),
        }),
      );
      sqs.destroy();
      const { sql } = await db;
      for (let i = 0; i < 300 && rows.length === 0; i += 1) {
        await sleep(100);
        rows = await sql`select invoice_id, total::text as total from invoices`;
      }
      // The record's log line is written after its commit, and reaches this pipe a moment later on a busy host.
      const completedLine = /"worker_message_completed".*"result":"COMPLETED"/;
      for (let i = 0; i < 300 && !completedLine.test(output); i += 1) await sleep(100);

      // Assess
      expect(rows).toEqual([{ invoice_id: payload.invoiceId, total: payload.total }]);
      const inbox = await sql`select status, result_ref from worker_inbox`;
      expect(inbox).toEqual([{ status: 'COMPLETED', result_ref: `invoices/${payload.invoiceId}` }]);
      expect(output).toContain('Worker "case-worker" running InvoiceIssued v1 from ');
      expect(output).toContain('"messageType":"InvoiceIssued"');
      expect(output).toMatch(completedLine);
    } finally {
      // Ctrl-C: SIGINT to the foreground process group (npm, tsx and the worker), as a terminal sends it
      if (child.pid && child.exitCode === null) process.kill(-child.pid, 'SIGINT');
    }
    // npm start stops on Ctrl-C: the worker exits 0 and npm ends on the signal, as in a terminal; no stack trace
    const [code, signal] = await exited;
    expect({ code, signal }, output.slice(-2000)).toSatisfy(
      (end: { code: number | null; signal: string | null }) => end.code === 0 || end.signal === 'SIGINT',
    );
    expect(output).not.toMatch(/^\s+at /m);

    // Assess: the deploy commands need an AWS account and are not run; they deploy the file saved above
    expect(deploy?.map((command) => command.split(' ').slice(0, 3).join(' '))).toEqual([
      'npx cdk deploy',
      'npx sqs-worker smoke',
    ]);
    expect(blocks(text, 'sh')[1]).toContain(`"workerEntry": "${handlerFile}"`);
  }, 120_000);
});
