import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { sqsClientFor } from '../../tools/local/local-sqs.ts';
import { createTestDatabase } from '../support/database.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const db = await createTestDatabase();

describe('npm start -- --handlers <file> (your own handlers, locally)', () => {
  it.each([
    { runtime: 'event-source-mapping', n: 7 },
    { runtime: 'poller', n: 8 },
  ])(
    'stays up consuming what is sent to the printed queue with the printed command on --runtime $runtime, and stops on SIGTERM',
    async ({ runtime, n }) => {
      // Prepare
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          'bin/local.ts',
          '--runtime',
          runtime,
          '--handlers',
          'test/fixtures/handlers-modules/ping.ts',
        ],
        {
          cwd: ROOT,
          env: {
            PATH: process.env.PATH ?? '',
            HOME: process.env.HOME ?? '',
            AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
            POWERTOOLS_LOG_LEVEL: 'SILENT',
            DATABASE_URL: db.url,
          },
        },
      );
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      const exited = once(child, 'exit');
      try {
        for (let i = 0; i < 300 && !stdout.includes('aws sqs send-message'); i += 1) await sleep(100);
        const command =
          /aws sqs send-message --endpoint-url (\S+) --region (\S+) --queue-url (\S+) --message-body '(.+)'/.exec(
            stdout,
          );
        expect(command, stdout).not.toBeNull();
        const [, endpoint, region, queueUrl, body] = command as unknown as string[];

        // Act: the printed envelope, with a payload the handler accepts.
        // (a key of its own per run: both runs share the database)
        const envelope = { ...JSON.parse(body), idempotencyKey: `local:Pinged:${n}`, payload: { n } };
        const sqs = sqsClientFor(endpoint, region);
        await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(envelope) }));
        sqs.destroy();
        let rows: { consumer: string; status: string; result_ref: string }[] = [];
        for (let i = 0; i < 300 && rows.length === 0; i += 1) {
          await sleep(100);
          rows = await db.sql`
          select consumer, status, result_ref from worker_inbox
          where status = 'COMPLETED' and result_ref = ${`pings/${n}`}
        `;
        }

        // Assess
        expect(stdout).toContain('Worker "case-worker" running Pinged v1 from ');
        expect(rows).toEqual([{ consumer: 'case-worker', status: 'COMPLETED', result_ref: `pings/${n}` }]);
      } finally {
        child.kill('SIGTERM');
      }
      const [code] = await exited;
      expect(code).toBe(0);
    },
  );

  it('exits 2 before starting anything when the module does not exist', async () => {
    // Act
    const child = spawn(process.execPath, ['--import', 'tsx', 'bin/local.ts', '--handlers', 'nope.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const [code] = await once(child, 'exit');

    // Assess
    expect(code).toBe(2);
    expect(stderr).toMatch(/^npm start: --handlers nope\.ts: no such file \(looked for .*nope\.ts\)/);
    expect(stderr).not.toContain('Starting PostgreSQL');
  });
});
