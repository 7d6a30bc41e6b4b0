import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createTestDatabase } from '../support/database.ts';
import { sendPaymentWithPrintedSettings, startKeptScenario } from '../support/local-start-run.ts';
import { waitFor } from '../support/wait-for.ts';

const db = await createTestDatabase();
const CLI = fileURLToPath(new URL('../../bin/sqs-worker.ts', import.meta.url));

/** `sqs-worker <args> --json` from the sources, with exactly the printed settings; its JSON document. */
async function cli(args: string[], settings: Record<string, string>): Promise<Record<string, unknown>> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', CLI, ...args, '--json'],
    {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...settings },
      timeout: 60_000,
    },
  );
  return JSON.parse(stdout) as Record<string, unknown>;
}

describe('sqs-worker logs on the log file of npm start -- --keep', () => {
  it("finds a message's lines by key and by type, with the local worker version that queue status shows", async () => {
    // Prepare
    const kept = startKeptScenario(db.url);
    const key = 'logs:payment:1';
    let settings: Record<string, string> = {};
    let byKey: Record<string, unknown> = {};
    let byType: Record<string, unknown> = {};
    let status: Record<string, unknown> = {};
    try {
      settings = await kept.settingsPrintedBefore('npx sqs-worker smoke', 150_000);
      await sendPaymentWithPrintedSettings(settings, key);
      await waitFor(
        'the kept worker logged the completion of the message',
        async () =>
          readFileSync(settings.SQS_WORKER_LOG_FILE as string, 'utf8').includes(`"idempotencyKey":"${key}"`),
        60_000,
        200,
      );

      // Act
      byKey = await cli(['logs', '--key', key], settings);
      byType = await cli(['logs', '--by-type', '--since', '1h'], settings);
      status = await cli(['queue', 'status'], settings);
    } finally {
      kept.stop('SIGTERM');
    }
    await kept.exited;

    // Assess
    expect(byKey.source).toBe(settings.SQS_WORKER_LOG_FILE);
    expect(byKey.rows).toMatchObject([
      {
        message: 'worker_message_completed',
        result: 'COMPLETED',
        idempotencyKey: key,
        messageType: 'PaymentCaptured',
        workerVersion: settings.SQS_WORKER_LOCAL_VERSION,
      },
    ]);
    expect(settings.SQS_WORKER_LOCAL_VERSION).toMatch(/^local-[0-9a-f]{12}$/);
    const types = byType.rows as { messageType?: string; records: string }[];
    // The scenario's lines and the kept worker's: the scenario sends far more than one PaymentCaptured.
    expect(Number(types.find((row) => row.messageType === 'PaymentCaptured')?.records)).toBeGreaterThan(1);
    expect(status.workerVersion).toEqual({ version: settings.SQS_WORKER_LOCAL_VERSION, from: 'local stack' });
  }, 300_000);
});
