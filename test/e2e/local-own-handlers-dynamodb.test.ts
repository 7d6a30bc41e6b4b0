import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { LOCAL_ACCESS_KEY_IDS } from '../../tools/local/iam/local-identities.ts';
import { sqsClientFor } from '../../tools/local/local-sqs.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// Inside the repository (git-ignored), so that `sqs-inbox-worker/dynamodb` resolves as in a user's project.
mkdirSync(join(ROOT, '.tmp'), { recursive: true });
const dir = mkdtempSync(join(ROOT, '.tmp', 'dynamodb-minimal-example-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The ```ts block of docs/dynamodb.md's "Minimal example", saved as the page tells the user to. */
function savedExample(): string {
  const page = readFileSync(join(ROOT, 'docs/dynamodb.md'), 'utf8');
  const section = page.slice(page.indexOf('\n## Minimal example\n'));
  const code = /```ts\n([\s\S]*?)\n```/.exec(section)?.[1];
  if (!code) throw new Error('docs/dynamodb.md has no ```ts block under "## Minimal example"');
  const file = join(dir, 'case-worker.ts');
  writeFileSync(file, `${code}\n`);
  return file;
}

const admin = { accessKeyId: LOCAL_ACCESS_KEY_IDS.admin, secretAccessKey: 'local' };

/**
 * Runs `npm start -- <args>` (its script: tsx with the source condition, so the example's `sqs-inbox-worker/dynamodb`
 * resolves to this repository's sources, not to a dist/ that only a build writes) and returns it with what it
 * printed so far.
 */
function start(args: string[]): { child: ChildProcess; output: () => string; exited: Promise<unknown[]> } {
  const child = spawn(
    process.execPath,
    ['--conditions=@sqs-inbox-worker/source', '--import', 'tsx', 'bin/local.ts', ...args],
    {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        JAVA_HOME: process.env.JAVA_HOME ?? '',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        POWERTOOLS_LOG_LEVEL: 'SILENT',
      },
    },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  return { child, output: () => output, exited: once(child, 'exit') };
}

describe('npm start -- --store dynamodb --handlers <docs/dynamodb.md minimal example>', () => {
  const example = savedExample();

  it.each(['event-source-mapping', 'poller'])(
    'runs the documented example on --runtime %s and writes its item in DynamoDB Local',
    async (runtime) => {
      // Prepare
      const run = start(['--store', 'dynamodb', '--runtime', runtime, '--handlers', example]);
      try {
        for (let i = 0; i < 1200 && !run.output().includes('aws sqs send-message'); i += 1) {
          if (run.child.exitCode !== null) break;
          await sleep(100);
        }
        const command =
          /aws sqs send-message --endpoint-url (\S+) --region (\S+) --queue-url (\S+) --message-body '(.+)'/.exec(
            run.output(),
          );
        expect(command, run.output()).not.toBeNull();
        const [, endpoint, region, queueUrl, body] = command as unknown as string[];
        const dynamoEndpoint = /export DYNAMODB_ENDPOINT='([^']+)'/.exec(run.output())?.[1];
        const table = /export DYNAMODB_TABLE='([^']+)'/.exec(run.output())?.[1];
        expect({ dynamoEndpoint, table }, run.output()).toEqual({
          dynamoEndpoint: expect.any(String),
          table: expect.any(String),
        });

        // Act: the printed envelope with the documented handler's payload
        const envelope = { ...JSON.parse(body), payload: { caseId: 'c-7', stage: 'REVIEW', version: 3 } };
        const sqs = sqsClientFor(endpoint, region);
        await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(envelope) }));
        sqs.destroy();
        const dynamodb = new DynamoDBClient({ endpoint: dynamoEndpoint, region, credentials: admin });
        const read = async (PK: string, SK: string) =>
          (
            await dynamodb.send(
              new GetItemCommand({
                TableName: table,
                Key: { PK: { S: PK }, SK: { S: SK } },
                ConsistentRead: true,
              }),
            )
          ).Item;
        let inbox = await read(`IDEMP#${envelope.idempotencyKey}`, 'WORKER#case-worker');
        for (let i = 0; i < 600 && inbox?.status?.S !== 'COMPLETED'; i += 1) {
          await sleep(100);
          inbox = await read(`IDEMP#${envelope.idempotencyKey}`, 'WORKER#case-worker');
        }
        const item = await read('CASE#c-7', 'META');
        dynamodb.destroy();

        // Assess: the handler's item and its inbox completion, committed together
        expect(run.output()).toContain('Worker "case-worker" running CaseStageChanged v1 from ');
        expect(inbox?.status?.S, run.output()).toBe('COMPLETED');
        expect(inbox?.resultRef?.S).toBe('cases/c-7@3');
        expect(item).toMatchObject({ stage: { S: 'REVIEW' }, version: { N: '3' } });
      } finally {
        run.child.kill('SIGTERM');
      }
      const [code] = await run.exited;
      expect(code, run.output()).toBe(0);
    },
  );

  it.each([
    {
      args: ['--store', 'dynamodb', '--handlers', 'test/fixtures/handlers-modules/ping.ts'],
      message:
        "npm start: --handlers test/fixtures/handlers-modules/ping.ts: the module's handlers are PostgreSQL handlers (defineHandler, createWorkerFromConfig from sqs-inbox-worker/postgres), and --store dynamodb runs DynamoDB handlers: run it without --store (or with --store postgres), or define its handlers with defineDynamoHandler from sqs-inbox-worker/dynamodb (docs/dynamodb.md).",
    },
    {
      args: ['--handlers', 'test/fixtures/handlers-modules/dynamo-ping.ts'],
      message:
        "npm start: --handlers test/fixtures/handlers-modules/dynamo-ping.ts: the module's handlers are DynamoDB handlers (defineDynamoHandler, createDynamoWorkerFromConfig from sqs-inbox-worker/dynamodb), and --store postgres (the default) runs PostgreSQL handlers: run it with --store dynamodb, or define its handlers with defineHandler from sqs-inbox-worker.",
    },
  ])('exits 2 naming the fix when the module is of the other store ($args)', async ({ args, message }) => {
    // Act
    const run = start(args);
    const [code] = await run.exited;

    // Assess
    expect(code, run.output()).toBe(2);
    expect(run.output()).toContain(message);
  });
});
