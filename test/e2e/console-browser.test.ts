import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { TerminalError } from '../../lambda/errors.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import { defineHandler } from '../../lambda/stores/postgres/message-handler.ts';
import { startEventSourceMapping } from '../../tools/local/event-source-mapping.ts';
import { type LocalConsole, startLocalConsole } from '../../tools/local/local-console.ts';
import { createQueues, depth, paymentEnvelope, seedInbox, sendAll, startOpsSqs } from '../ops/ops-fixture.ts';
import { lastList, screenshot, tableUnder, useBrowser } from '../support/browser.ts';
import { createTestDatabase } from '../support/database.ts';
import { waitFor } from '../support/wait-for.ts';

// The operator console in a real browser (Debian's Chromium, playwright-core) on PostgreSQL: fauxqs, the real worker
// behind the local event source mapping, and the console started as `sqs-worker console` starts it, on the same
// settings. Each page is checked against the database and the queues; each action against its effect and audit row.
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
const db = await createTestDatabase();
const { sqs, endpoint } = await startOpsSqs();
const browser = await useBrowser();
const queues = await createQueues(sqs, { maxReceiveCount: 3 });
const workerSql = db.client({ max: 2 });
afterAll(() => workerSql.end({ timeout: 1 }));

/** Accounts the handler refuses (terminally) until the "fix" empties the set. */
const closed = new Set(['ACC-CLOSED']);
const payments = defineHandler({
  messageType: 'PaymentCaptured',
  schemaVersion: 1,
  payload: z.object({
    paymentId: z.string(),
    accountId: z.string(),
    amount: z.string(),
    currency: z.string(),
  }),
  async handle({ sql, payload }) {
    if (closed.has(payload.accountId)) throw new TerminalError('ACCOUNT_CLOSED', 'the account is closed');
    await sql`
      insert into ledger_entries (entry_id, account_id, amount, currency, source_event_id)
      values (${`ledger-${payload.paymentId}`}, ${payload.accountId}, ${payload.amount}, ${payload.currency}, ${payload.paymentId})
      on conflict (source_event_id) do nothing
    `;
    return undefined;
  },
});
const esm = await startEventSourceMapping({
  sqs,
  queueUrl: queues.queueUrl,
  handler: createWorker({
    consumer: 'case-worker',
    handlers: [payments],
    sql: workerSql,
    sqs,
    backoff: { baseSeconds: 1, maxSeconds: 1 },
    logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
    metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
  }),
  batchSize: 10,
  waitTimeSeconds: 1,
  functionTimeoutMs: 10_000,
});
afterAll(() => esm.stop());

const settings = {
  DATABASE_URL: db.url,
  SQS_ENDPOINT: endpoint,
  AWS_REGION: 'us-east-1',
  WORKER_QUEUE_URL: queues.queueUrl,
  WORKER_DLQ_URL: queues.dlqUrl,
};
const good = [1, 2, 3].map((i) => paymentEnvelope(i));
const refused = [4, 5].map((i) => paymentEnvelope(i, {}));
for (const envelope of refused) (envelope.payload as { accountId: string }).accountId = 'ACC-CLOSED';
const inDlq = [6, 7].map((i) => paymentEnvelope(i));
let actions: LocalConsole;
let readOnly: LocalConsole;

const status = async (key: string) =>
  (await db.sql<{ status: string }[]>`select status from worker_inbox where idempotency_key = ${key}`)[0]
    ?.status;
const audits = (key: string) => db.sql<{ auditId: string; action: string; actor: string }[]>`
  select audit_id::text as "auditId", action, actor from ops_audit where idempotency_key = ${key} order by audit_id
`;
const paymentIdOf = (envelope: { payload?: unknown } | undefined) =>
  (envelope?.payload as { paymentId?: string } | undefined)?.paymentId ?? '';
const applied = async (paymentId: string) =>
  (await db.sql`select 1 from ledger_entries where source_event_id = ${paymentId}`).length === 1;

beforeAll(async () => {
  await sendAll(sqs, queues.queueUrl, [...good, ...refused, 'not json {']);
  await waitFor(
    'the worker completed the good payments and quarantined the refused ones and the broken body',
    async () => {
      const [row] = await db.sql<{ completed: number; quarantined: number }[]>`
        select (select count(*)::int from worker_inbox where status = 'COMPLETED') as completed,
               (select count(*)::int from worker_quarantine) as quarantined
      `;
      return row?.completed === 3 && row.quarantined === 3;
    },
    60_000,
    100,
  );
  // Two payments that failed terminally before, their copies in the DLQ.
  for (const envelope of inDlq) {
    await seedInbox(db.sql, envelope, {
      status: 'FAILED_TERMINAL',
      failureCode: 'ACCOUNT_CLOSED',
      attempts: 3,
    });
  }
  await sendAll(sqs, queues.dlqUrl, inDlq);
  actions = await startLocalConsole(settings, true);
  readOnly = await startLocalConsole(settings, false);
}, 120_000);
afterAll(async () => {
  await actions?.stop();
  await readOnly?.stop();
});

/** A page of the console with the run's token exchanged for its cookie (the first URL, as printed). */
async function openConsole(running: LocalConsole): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  afterAll(() => page.close());
  const response = await page.goto(running.url);
  expect(response?.status()).toBe(200);
  expect(page.url()).not.toContain('token=');
  return page;
}

describe('sqs-worker console on PostgreSQL, in Chromium', () => {
  let page: Page;
  beforeAll(async () => {
    page = await openConsole(actions);
  });

  it('overview: the queue depths the queues report and the inbox counts the database holds', async () => {
    // Act
    await page.goto(`${actions.origin}/`);

    // Assess
    const dlqDepth = await depth(sqs, queues.dlqUrl);
    expect(await page.locator('[data-figure="dlq"] b').textContent()).toBe(
      String(dlqDepth.visible + dlqDepth.inFlight),
    );
    const counts = await db.sql<{ status: string; n: number }[]>`
      select status, count(*)::int as n from worker_inbox group by status
    `;
    const [inbox] = await tableUnder(page, 'Inbox');
    const head = await page.locator('section:has(h2:text-is("Inbox")) thead th').allTextContents();
    for (const { status: s, n } of counts) expect(inbox?.[head.indexOf(s)]).toBe(String(n));
    expect(await page.locator('svg[aria-label="Inbox per minute"] polyline').count()).toBe(3);
    await screenshot(page, 'overview-fresh');
  });

  it('failure groups: the quarantine and the DLQ counted by code, as the tables hold them', async () => {
    // Act
    await page.goto(`${actions.origin}/groups`);

    // Assess
    const quarantined = await tableUnder(page, 'Quarantine, by reason');
    const byReason = await db.sql<{ reason: string; n: number }[]>`
      select reason_code as reason, count(*)::int as n from worker_quarantine where released_at is null group by 1
    `;
    for (const { reason, n } of byReason) {
      expect(
        quarantined.filter((row) => row[0] === reason).reduce((sum, row) => sum + Number(row[2]), 0),
      ).toBe(n);
    }
    const dlq = await tableUnder(page, 'DLQ, by failure');
    expect(dlq.find((row) => row[0] === 'ACCOUNT_CLOSED')?.[2]).toBe('2');
    await screenshot(page, 'failure-groups');
  });

  it('one message: inbox row, attempts, quarantine entry and envelope, the payload only on request', async () => {
    // Act
    const key = refused[0]?.idempotencyKey as string;
    await page.goto(`${actions.origin}/message?key=${encodeURIComponent(key)}`);

    // Assess
    const inbox = Object.fromEntries(
      (await page
        .locator('section:has(h2:text-is("Inbox entry")) tr')
        .evaluateAll((rows) =>
          rows.map((r) => [r.querySelector('th')?.textContent, r.querySelector('td')?.textContent]),
        )) as [string, string][],
    );
    expect(inbox.status).toBe(await status(key));
    const [quarantine] = await db.sql<{ id: string; reason: string }[]>`
      select quarantine_id::text as id, reason_code as reason from worker_quarantine where idempotency_key = ${key}
    `;
    const entries = await tableUnder(page, 'Quarantine entries');
    expect(entries.map((row) => row.slice(0, 2))).toEqual([[quarantine?.id, 'ACCOUNT_CLOSED']]);
    expect((await tableUnder(page, 'Attempts')).length).toBeGreaterThan(0);
    const body = await page.locator('main').textContent();
    expect(body).toContain('PaymentCaptured');
    expect(body).not.toContain('ACC-CLOSED');
    await page.getByRole('link', { name: 'Show the payload' }).click();
    expect(await page.locator('pre').last().textContent()).toContain('ACC-CLOSED');
    await screenshot(page, 'message');
  });

  it('quarantine and DLQ lists: the rows the filters select', async () => {
    // Act
    await page.goto(`${actions.origin}/quarantine`);
    await page.fill('input[name="reason"]', 'ACCOUNT_CLOSED');
    await page.click('form.filters button');
    const listed = await tableUnder(page, 'Entries');
    await screenshot(page, 'quarantine');
    await page.goto(`${actions.origin}/dlq`);
    const dlq = await tableUnder(page, 'Messages');

    // Assess
    const rows = await db.sql<{ id: string }[]>`
      select quarantine_id::text as id from worker_quarantine where reason_code = 'ACCOUNT_CLOSED' order by 1
    `;
    expect(listed.map((row) => row[0]).sort()).toEqual(rows.map((row) => row.id).sort());
    expect(dlq.map((row) => row[1]).sort()).toEqual(inDlq.map((e) => e.idempotencyKey).sort());
    await screenshot(page, 'dlq');
  });

  it('release: the dry run shows the guard, the release re-sends, and the worker applies it; audited', async () => {
    // Prepare: the fix is deployed
    closed.clear();
    const key = refused[0]?.idempotencyKey as string;
    await page.goto(`${actions.origin}/message?key=${encodeURIComponent(key)}`);

    // Act
    await page.getByRole('link', { name: 'release…' }).click();
    expect(await page.locator('[data-guard]').getAttribute('data-guard')).toBe('clear');
    await screenshot(page, 'release-preview');
    await page.getByRole('button', { name: /^Release / }).click();
    const said = await page.getByRole('status').textContent();

    // Assess
    const [audit] = await audits(key);
    expect(audit).toMatchObject({
      action: 'quarantine_release',
      actor: expect.stringContaining('(console)'),
    });
    expect(said).toContain(audit?.auditId);
    await waitFor(
      'the released payment is applied',
      async () => (await status(key)) === 'COMPLETED',
      30_000,
      100,
    );
    expect(await applied(paymentIdOf(refused[0]))).toBe(true);
    const [entry] = await db.sql`select released_at from worker_quarantine where idempotency_key = ${key}`;
    expect(entry?.released_at).not.toBeNull();
  });

  it('release of every matching entry: a dry run listing them, then each released through its guard', async () => {
    // Act
    await page.goto(`${actions.origin}/quarantine?reason=ACCOUNT_CLOSED`);
    await page.getByRole('link', { name: /Release every unreleased entry/ }).click();
    const preview = await lastList(page);
    await page.getByRole('button', { name: /Release the 1 entries/ }).click();

    // Assess
    const key = refused[1]?.idempotencyKey as string;
    expect(preview.some((row) => row[1] === key && row[4] === 'would release')).toBe(true);
    expect(await page.getByRole('status').textContent()).toContain('Released 1 of 1');
    expect((await audits(key)).map((a) => a.action)).toEqual(['quarantine_release']);
    await waitFor(
      'the bulk-released payment is applied',
      async () => (await status(key)) === 'COMPLETED',
      30_000,
      100,
    );
  });

  it('canary redrive: the dry run lists the moves, the canary moves them and follows them to COMPLETED; audited', async () => {
    // Act
    await page.goto(`${actions.origin}/dlq`);
    await page.getByRole('link', { name: /Canary redrive/ }).click();
    expect((await lastList(page)).length).toBe(1);
    await page.fill('input[name="canary"]', '2');
    await page.fill('input[name="roundTimeout"]', '30s');
    await page.getByRole('button', { name: 'Redrive the canary' }).click();

    // Assess
    expect(await page.getByRole('status').textContent()).toContain('2 moved, 2 succeeded');
    for (const envelope of inDlq) {
      expect(await status(envelope.idempotencyKey)).toBe('COMPLETED');
      expect((await audits(envelope.idempotencyKey)).map((a) => a.action)).toEqual(['dlq_redrive']);
    }
    expect(await depth(sqs, queues.dlqUrl)).toEqual({ visible: 0, inFlight: 0 });
    await screenshot(page, 'canary-result');
  });

  it('cancel: a key cancelled ahead of its copy; the copy is quarantined CANCELLED, never applied; audited', async () => {
    // Prepare
    const late = paymentEnvelope(8);
    const key = late.idempotencyKey;
    await page.goto(`${actions.origin}/message?key=${encodeURIComponent(key)}`);

    // Act
    await page.getByRole('link', { name: 'Cancel this key…' }).click();
    expect(await page.locator('[data-guard]').getAttribute('data-guard')).toBe('clear');
    await page.fill('input[name="reason"]', 'sent by mistake');
    await page.getByRole('button', { name: /^Cancel / }).click();
    await sendAll(sqs, queues.queueUrl, [late]);

    // Assess
    const [cancelled] = await db.sql`select reason from worker_cancelled_keys where idempotency_key = ${key}`;
    expect(cancelled?.reason).toBe('sent by mistake');
    expect((await audits(key)).map((a) => a.action)).toEqual(['inbox_cancel']);
    await waitFor(
      'the late copy is quarantined as CANCELLED',
      async () =>
        (
          await db.sql`select 1 from worker_quarantine where idempotency_key = ${key} and reason_code = 'CANCELLED'`
        ).length === 1,
      30_000,
      100,
    );
    expect(await applied(paymentIdOf(late))).toBe(false);
  });
});

describe('sqs-worker console refuses what it must', () => {
  it('a request without the token, with another Host, an action from another origin or without the CSRF token', async () => {
    // Prepare: a cookie of the run, as a browser has it after the first page
    const first = await fetch(actions.url, { redirect: 'manual' });
    const cookie = (first.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const csrf = (
      await (await fetch(`${actions.origin}/actions/cancel?key=k`, { headers: { cookie } })).text()
    ).match(/name="csrf" value="([^"]+)"/)?.[1] as string;
    const post = (headers: Record<string, string>, form: Record<string, string>) =>
      fetch(`${actions.origin}/actions/cancel`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams(form).toString(),
        redirect: 'manual',
      });

    // Act
    const noToken = await fetch(`${actions.origin}/`);
    const otherHost = await requestWithHost(actions.origin, 'attacker.example:80', cookie);
    const otherOrigin = await post({ cookie, origin: 'http://attacker.example' }, { csrf, key: 'refused:1' });
    const noCsrf = await post({ cookie, origin: actions.origin }, { key: 'refused:2' });
    const allowed = await post({ cookie, origin: actions.origin }, { csrf, key: 'allowed:1' });

    // Assess
    expect(first.status).toBe(303);
    expect(noToken.status).toBe(401);
    expect(otherHost).toBe(421);
    expect(otherOrigin.status).toBe(403);
    expect(noCsrf.status).toBe(403);
    expect(allowed.status).toBe(200);
    const rows = await db.sql<{ key: string }[]>`
      select idempotency_key as key from worker_cancelled_keys where idempotency_key like any (array['refused:%', 'allowed:%'])
    `;
    expect(rows.map((row) => row.key)).toEqual(['allowed:1']);
  });

  it('a form on another origin that posts to the console, in the browser that holds its cookie', async () => {
    // Prepare: a page of another origin (another port of 127.0.0.1) whose form posts a cancel to the console
    const page = await openConsole(actions);
    const evil = createServer((_request, response) => {
      response.setHeader('content-type', 'text/html');
      response.end(
        `<form method="post" action="${actions.origin}/actions/cancel"><input name="key" value="evil:1"><input name="csrf" value="guess"><button>go</button></form>`,
      );
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    afterAll(() => evil.close());

    // Act
    await page.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
    const [response] = await Promise.all([
      page.waitForResponse(`${actions.origin}/actions/cancel`),
      page.click('button'),
    ]);

    // Assess
    expect(response.status()).toBe(403);
    expect(await db.sql`select 1 from worker_cancelled_keys where idempotency_key = 'evil:1'`).toHaveLength(
      0,
    );
  });

  it('a read-only console offers no form and refuses an action', async () => {
    // Prepare
    const page = await openConsole(readOnly);
    await page.goto(`${readOnly.origin}/actions/cancel?key=ro:1`);
    const note = await page.locator('main').textContent();
    const cookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');

    // Act
    const refusedPost = await fetch(`${readOnly.origin}/actions/cancel`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, origin: readOnly.origin },
      body: 'key=ro%3A1&csrf=x',
    });

    // Assess
    expect(await page.locator('form[method="post"]').count()).toBe(0);
    expect(note).toContain('read-only');
    expect(refusedPost.status).toBe(403);
    expect(await db.sql`select 1 from worker_cancelled_keys where idempotency_key = 'ro:1'`).toHaveLength(0);
  });
});

/** The status of a GET with its own Host header (fetch does not let a caller set Host). */
async function requestWithHost(origin: string, host: string, cookie: string): Promise<number> {
  const { request } = await import('node:http');
  const url = new URL(origin);
  return new Promise((resolve, reject) => {
    request({ host: url.hostname, port: url.port, path: '/', headers: { host, cookie } }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    })
      .on('error', reject)
      .end();
  });
}
