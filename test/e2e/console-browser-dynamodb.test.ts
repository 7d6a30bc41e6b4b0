import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { TerminalError } from '../../lambda/errors.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import { defineDynamoHandler } from '../../lambda/stores/dynamodb/dynamo-handler.ts';
import { createDynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import {
  AUDIT_PK_PREFIX,
  INBOX_PK_PREFIX,
  inboxKey,
  QUARANTINE_PK_PREFIX,
} from '../../lambda/stores/dynamodb/item-keys.ts';
import { startEventSourceMapping } from '../../tools/local/event-source-mapping.ts';
import { type LocalConsole, startLocalConsole } from '../../tools/local/local-console.ts';
import { createQueues, depth, paymentEnvelope, sendAll, startOpsSqs } from '../ops/ops-fixture.ts';
import { lastList, screenshot, tableUnder, useBrowser } from '../support/browser.ts';
import { dynamoProcessor } from '../support/dynamo-processor.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { sqsRecordFactory } from '../support/sqs-event.ts';
import { waitFor } from '../support/wait-for.ts';

// The operator console on the DynamoDB store, in Chromium: DynamoDB Local, fauxqs, the real worker behind the local
// event source mapping, and the console on the same settings as `sqs-worker console --store dynamodb` reads them.
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
const dynamo = useTestDynamoDb();
const { sqs, endpoint } = await startOpsSqs();
const browser = await useBrowser();
const queues = await createQueues(sqs, { maxReceiveCount: 3 });

/** Accounts the handler refuses (terminally) until the "fix" empties the set. */
const closed = new Set(['ACC-CLOSED']);
const payments = defineDynamoHandler({
  messageType: 'PaymentCaptured',
  schemaVersion: 1,
  payload: z.object({
    paymentId: z.string(),
    accountId: z.string(),
    amount: z.string(),
    currency: z.string(),
  }),
  async handle({ payload }) {
    if (closed.has(payload.accountId)) throw new TerminalError('ACCOUNT_CLOSED', 'the account is closed');
    return { writes: [] };
  },
});
const good = paymentEnvelope(1);
const refused = paymentEnvelope(2);
(refused.payload as { accountId: string }).accountId = 'ACC-CLOSED';
const inDlq = paymentEnvelope(3);
let table: string;
let running: LocalConsole;
let page: Page;

const item = async (key: string) =>
  (
    await dynamo.doc.send(
      new GetCommand({ TableName: table, Key: inboxKey('case-worker', key), ConsistentRead: true }),
    )
  ).Item;
const items = async () =>
  (await dynamo.doc.send(new ScanCommand({ TableName: table, ConsistentRead: true }))).Items ?? [];
const auditsOf = async (key: string) =>
  (await items())
    .filter((i) => String(i.PK).startsWith(AUDIT_PK_PREFIX) && i.idempotencyKey === key)
    .map((i) => String(i.action));

beforeAll(async () => {
  table = await dynamo.createTable('console');
  const esm = await startEventSourceMapping({
    sqs,
    queueUrl: queues.queueUrl,
    handler: createWorker({
      consumer: 'case-worker',
      handlers: [payments],
      store: createDynamoStore({ client: dynamo.newClient(), tableName: table }),
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
  // A payment refused before, its copy in the DLQ (its inbox item FAILED_TERMINAL, as the worker left it).
  const process = dynamoProcessor(dynamo, table, [payments]);
  closed.add(String((inDlq.payload as { accountId: string }).accountId));
  await process(sqsRecordFactory(inDlq));
  closed.delete(String((inDlq.payload as { accountId: string }).accountId));
  await sendAll(sqs, queues.dlqUrl, [inDlq]);
  await sendAll(sqs, queues.queueUrl, [good, refused]);
  await waitFor(
    'the worker completed one payment and quarantined the other',
    async () =>
      (await item(good.idempotencyKey))?.status === 'COMPLETED' &&
      (await item(refused.idempotencyKey))?.status === 'FAILED_TERMINAL',
    60_000,
    100,
  );
  running = await startLocalConsole(
    {
      WORKER_STORE: 'dynamodb',
      DYNAMODB_ENDPOINT: dynamo.endpoint,
      DYNAMODB_TABLE: table,
      SQS_ENDPOINT: endpoint,
      AWS_REGION: 'us-east-1',
      WORKER_QUEUE_URL: queues.queueUrl,
      WORKER_DLQ_URL: queues.dlqUrl,
    },
    true,
  );
  afterAll(() => running.stop());
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  afterAll(() => page.close());
  await page.goto(running.url);
}, 120_000);

describe('sqs-worker console on the DynamoDB store, in Chromium', () => {
  it('overview, groups, message, quarantine and DLQ pages show what the table and the queues hold', async () => {
    // Act
    await page.goto(`${running.origin}/`);
    const dlqFigure = await page.locator('[data-figure="dlq"] b').textContent();
    const head = await page.locator('section:has(h2:text-is("Inbox")) thead th').allTextContents();
    const [counts] = await tableUnder(page, 'Inbox');
    await page.goto(`${running.origin}/groups`);
    const groups = await tableUnder(page, 'Quarantine, by reason');
    await page.goto(`${running.origin}/message?key=${encodeURIComponent(refused.idempotencyKey)}`);
    const entries = await tableUnder(page, 'Quarantine entries');
    await screenshot(page, 'message-dynamodb');
    await page.goto(`${running.origin}/dlq`);
    const dlq = await tableUnder(page, 'Messages');

    // Assess
    const dlqDepth = await depth(sqs, queues.dlqUrl);
    expect(dlqFigure).toBe(String(dlqDepth.visible + dlqDepth.inFlight));
    const inbox = (await items()).filter((i) => String(i.PK).startsWith(INBOX_PK_PREFIX));
    const completed = inbox.filter((i) => i.status === 'COMPLETED').length;
    expect(counts?.[head.indexOf('COMPLETED')]).toBe(String(completed));
    expect(
      groups.filter((row) => row[0] === 'ACCOUNT_CLOSED').reduce((n, row) => n + Number(row[2]), 0),
    ).toBe(2);
    const quarantined = (await items()).filter(
      (i) => String(i.PK).startsWith(QUARANTINE_PK_PREFIX) && i.idempotencyKey === refused.idempotencyKey,
    );
    expect(entries.map((row) => row[0])).toEqual(quarantined.map((q) => String(q.bodyHash)));
    expect(dlq.map((row) => row[1])).toEqual([inDlq.idempotencyKey]);
  });

  it('release, canary redrive and cancel: each applied as the CLI applies it, each audited', async () => {
    // Prepare: the fix is deployed
    closed.clear();

    // Act: release the quarantined payment
    await page.goto(`${running.origin}/message?key=${encodeURIComponent(refused.idempotencyKey)}`);
    await page.getByRole('link', { name: 'release…' }).click();
    await page.getByRole('button', { name: /^Release / }).click();
    const released = await page.getByRole('status').textContent();
    // … redrive the DLQ's copy as a canary
    await page.goto(`${running.origin}/dlq`);
    await page.getByRole('link', { name: /Canary redrive/ }).click();
    const preview = await lastList(page);
    await page.getByRole('button', { name: 'Redrive the canary' }).click();
    const redriven = await page.getByRole('status').textContent();
    // … and cancel a key ahead of its copy
    const late = paymentEnvelope(4);
    await page.goto(`${running.origin}/actions/cancel?key=${encodeURIComponent(late.idempotencyKey)}`);
    await page.fill('input[name="reason"]', 'duplicate order');
    await page.getByRole('button', { name: /^Cancel / }).click();
    await sendAll(sqs, queues.queueUrl, [late]);

    // Assess
    expect(released).toContain('Released');
    await waitFor(
      'the released payment completes',
      async () => (await item(refused.idempotencyKey))?.status === 'COMPLETED',
      30_000,
      100,
    );
    expect(await auditsOf(refused.idempotencyKey)).toEqual(['quarantine_release']);
    expect(preview.map((row) => row[1])).toEqual([inDlq.idempotencyKey]);
    expect(redriven).toContain('1 moved, 1 succeeded');
    expect((await item(inDlq.idempotencyKey))?.status).toBe('COMPLETED');
    expect(await auditsOf(inDlq.idempotencyKey)).toEqual(['dlq_redrive']);
    expect(await depth(sqs, queues.dlqUrl)).toEqual({ visible: 0, inFlight: 0 });
    expect(await auditsOf(late.idempotencyKey)).toEqual(['inbox_cancel']);
    await waitFor(
      'the late copy is quarantined as CANCELLED',
      async () =>
        (await items()).some(
          (i) =>
            String(i.PK).startsWith(QUARANTINE_PK_PREFIX) &&
            i.idempotencyKey === late.idempotencyKey &&
            i.reasonCode === 'CANCELLED',
        ),
      30_000,
      100,
    );
    expect((await item(late.idempotencyKey))?.status).toBe('CANCELLED');
  });
});
