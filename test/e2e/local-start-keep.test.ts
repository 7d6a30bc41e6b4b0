import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { screenshot, useBrowser } from '../support/browser.ts';
import { createTestDatabase } from '../support/database.ts';
import { sendPaymentWithPrintedSettings, startKeptScenario } from '../support/local-start-run.ts';
import { waitFor } from '../support/wait-for.ts';

const db = await createTestDatabase();
const browser = await useBrowser();

describe('npm start -- --keep (no AWS_* variable in its environment)', () => {
  it('consumes a message sent with the printed settings after the summary, shows it in the printed console, and SIGTERM stops it with exit 0', async () => {
    // Prepare
    const kept = startKeptScenario(db.url);
    const key = 'kept:payment:1';
    let status: string | undefined;
    let settings: Record<string, string> = {};
    let consoleUrl: string | undefined;
    let shown: Record<string, string> = {};
    let logRows = 0;
    let overviewInbox: string[] = [];
    let logText = '';
    try {
      settings = await kept.settingsPrintedBefore('npx sqs-worker smoke', 120_000);

      // Act: the real SDK with exactly the printed endpoint, region, key and queue.
      await sendPaymentWithPrintedSettings(settings, key);
      // The printed DATABASE_URL (the ops role) reads the inbox, as `sqs-worker inbox show` does.
      const ops = postgres(settings.DATABASE_URL as string, { max: 1, onnotice: () => {} });
      try {
        await waitFor(
          'the kept worker completed the message',
          async () => {
            const [row] = await ops<{ status: string }[]>`
              select status from worker_inbox where idempotency_key = ${key}
            `;
            status = row?.status;
            return status === 'COMPLETED';
          },
          60_000,
          200,
        );
      } finally {
        await ops.end({ timeout: 5 });
      }
      // The printed console shows this run's message, as the inbox holds it.
      consoleUrl = kept.stdout.match(
        /^Operator console \(read-only[^)]*\): (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)$/m,
      )?.[1];
      const page = await browser.newPage();
      try {
        await page.goto(consoleUrl as string);
        // The overview of a whole run (its charts hold the scenario's minutes): the picture docs/operations.md shows.
        overviewInbox = await page.locator('section:has(h2:text-is("Inbox")) tbody td').allTextContents();
        await screenshot(page, 'overview');
        await page.goto(`${new URL(consoleUrl as string).origin}/message?key=${encodeURIComponent(key)}`);
        shown = Object.fromEntries(
          (await page
            .locator('section:has(h2:text-is("Inbox entry")) tr')
            .evaluateAll((rows) =>
              rows.map((r) => [r.querySelector('th')?.textContent, r.querySelector('td')?.textContent]),
            )) as [string, string][],
        );
        // Its log lines, by the saved query, from the run's log file.
        await page.goto(`${new URL(consoleUrl as string).origin}/logs?key=${encodeURIComponent(key)}`);
        logRows = await page.locator('main table tbody tr').count();
        logText = (await page.locator('main table').textContent()) ?? '';
      } finally {
        await page.close();
      }
    } finally {
      kept.stop('SIGTERM');
    }
    const code = await kept.exited;

    // Assess
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
    expect(status).toBe('COMPLETED');
    expect(consoleUrl).toBeDefined();
    expect(shown).toMatchObject({ idempotencyKey: key, status: 'COMPLETED' });
    expect(logRows).toBeGreaterThan(0);
    expect(overviewInbox.length).toBeGreaterThan(0);
    expect(logText).toContain(key);
    const ledger = await db.sql`select 1 from ledger_entries where source_event_id = ${key}`;
    expect(ledger).toHaveLength(1);
    expect(kept.stderr).not.toMatch(/CredentialsProviderError|Region is missing/);
    expect(code, kept.stderr.slice(-2000)).toBe(0);
  }, 240_000);
});
