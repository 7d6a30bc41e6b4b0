import { randomBytes } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, PutCommand, paginateScan } from '@aws-sdk/lib-dynamodb';
import { caseItemKey } from '../../lambda/domain/dynamodb/index.ts';
import { buildDemoMessages, demoMessageCount, keyOf, type ScenarioCase } from './demo-messages.ts';
import {
  accountedCheck,
  countBy,
  type DemoCheck,
  type DemoSummary,
  duplicatesCheck,
  peekQueue,
  reportProgress,
  scenarioVariables,
  sendAll,
  waitFor,
} from './demo-scenario.ts';
import type { FunctionSettings } from './function-host.ts';
import { type LocalQueues, queueCounts } from './local-queues.ts';
import { OutcomeRecorder } from './outcome-recorder.ts';
import type { PollerTaskSettings } from './poller-process.ts';
import { type ConsumerFigures, startScenarioConsumer } from './scenario-consumer.ts';

/** Options of {@link runDynamoDbDemoScenario}. */
export interface DynamoDbDemoScenarioOptions {
  /** DynamoDB Local's client and the worker's table (`startLocalStack({ store: 'dynamodb' })`). */
  readonly dynamodb: { readonly client: DynamoDBClient; readonly tableName: string };
  /** The operator's SQS client (sends, DLQ peeks). */
  readonly sqs: SQSClient;
  /**
   * The worker's clients (`startLocalStack().clients('worker')`): the store, the backoff and the event source
   * mapping run with the worker's role. @default `sqs` and `dynamodb.client`
   */
  readonly worker?: { readonly sqs: SQSClient; readonly dynamodb?: DynamoDBClient | undefined };
  /** The source queue and its DLQ (RedrivePolicy with maxReceiveCount ≥ 3). */
  readonly queues: LocalQueues;
  /** Regular messages to send, 20–100,000. @default 200 */
  readonly messages?: number;
  /** Invocations at once. @default 4 */
  readonly concurrency?: number;
  /** @default 'case-worker' */
  readonly consumer?: string;
  /**
   * What consumes the queue: the local event source mapping in front of the worker function, or the long-running
   * poller (`bin/poller.ts`) as its Fargate task runs. @default 'event-source-mapping'
   */
  readonly runtime?: 'event-source-mapping' | 'poller';
  /**
   * The deployed worker function (stage `dev-dynamodb`) pointed at the local stack (`localWorkerFunction`): the event
   * source mapping invokes it in a local function host, within its memory and timeout. Needed with runtime
   * `event-source-mapping`.
   */
  readonly workerFunction?: FunctionSettings;
  /**
   * The poller's Fargate task (stage `fargate-dynamodb`) pointed at the local stack (`localPollerTask`): the real
   * `bin/poller.ts` within the task's memory, with the task role's key. Needed with runtime `poller`.
   */
  readonly poller?: PollerTaskSettings;
  /** @default 90,000 */
  readonly timeoutMs?: number;
  readonly onProgress?: (settled: number, total: number) => void;
}

/**
 * `npm start -- --store dynamodb`: the scenario of `runDemoScenario` on the DynamoDB store (DynamoDB Local, the
 * example domain's DynamoDB handlers), through the local event source mapping (or, with `--runtime poller`, the
 * poller's task: `bin/poller.ts` as stage `fargate-dynamodb` synthesizes it) and the real engine, with the same
 * summary and the checks that apply to DynamoDB:
 *
 * - payments, stage changes and deadline requests → one effect each (ledger items, balances, deadline versions);
 * - duplicates (10 % of the payments) and redeliveries after a crash between commit and delete (2 %) → DUPLICATE;
 * - the same key with another payload → quarantined as IDEMPOTENCY_HASH_MISMATCH;
 * - poison (not JSON, unknown type) and terminal failures (no SLA, unknown case) → quarantined;
 * - out-of-order versions (v3, then v2) → STALE_VERSION_SKIPPED;
 * - a retryable failure (a deadline before its case exists) → backoff, then success once the case is created;
 * - a message that never recovers (its case never exists) → the DLQ after maxReceiveCount, body intact.
 *
 * Left out, being PostgreSQL's: the outbox relay (the producer side writes to PostgreSQL) and row locks; the
 * payloadRef cases run on PostgreSQL only here.
 */
export async function runDynamoDbDemoScenario(options: DynamoDbDemoScenarioOptions): Promise<DemoSummary> {
  const started = Date.now();
  const runId = `r${randomBytes(3).toString('hex')}`;
  const count = demoMessageCount(options.messages);
  const consumer = options.consumer ?? 'case-worker';
  const timeoutMs = options.timeoutMs ?? 90_000;
  const { sqs, queues } = options;
  const table = options.dynamodb.tableName;
  const doc = DynamoDBDocumentClient.from(options.dynamodb.client);

  // The scenario: the messages of every store, then this store's retryable and never-recovering cases.
  const { messages, add, deadline, caseIds, outOfOrder, paymentCount, phase2After, crashBodies } =
    buildDemoMessages(runId, count, {
      accountId: (index) => `${runId}-acct-${index % 7}`,
      deadlinesViaOutbox: false,
    });
  // Retryable: a deadline for a case that does not exist yet; the case is created after two failed attempts.
  const lateCase = `${runId}-case-late`;
  add('retryable-then-succeeds', deadline(lateCase, 'REVIEW'));
  const lateKey = `${lateCase}:deadline:REVIEW`;
  // Never recovers: its case never exists, and its attempt budget outlasts the queue's maxReceiveCount.
  const neverCase = `${runId}-case-never`;
  const neverBody = add('never-recovers', deadline(neverCase, 'REVIEW', { maxBusinessAttempts: 100 }));
  const total = messages.length;

  // State the producers already have: the cases exist at version 1.
  for (const caseId of caseIds) {
    await doc.send(
      new PutCommand({
        TableName: table,
        Item: { ...caseItemKey(caseId), stage: 'INVESTIGATION', version: 1 },
      }),
    );
  }

  const recorder = new OutcomeRecorder();
  const retries = (key: string) => recorder.countOf(key, 'RETRYABLE_FAILURE');
  const kills: string[] = [];
  const runtime = options.runtime ?? 'event-source-mapping';
  const esm = await startScenarioConsumer({
    runtime,
    worker: options.workerFunction,
    poller: options.poller,
    variables: scenarioVariables(consumer, '', runtime, options.concurrency ?? 4),
    sqs: options.worker?.sqs ?? sqs,
    inspect: sqs,
    queueUrl: queues.queueUrl,
    concurrency: options.concurrency ?? 4,
    recorder,
    dropDelete: (message) => message.receiveCount === 1 && crashBodies.has(message.body),
    onInvocation: (report) => {
      if (report.reason === 'out-of-memory' || report.reason === 'timeout')
        kills.push(`${report.detail} (${report.errorType}); ${report.function?.report ?? ''}`);
    },
    onTaskExit: (exit) => {
      if (exit.outOfMemory)
        kills.push(
          `poller task ${exit.task} stopped: ${exit.stoppedReason} (exit code ${exit.exitCode}), peak ${exit.peakMiB} MiB`,
        );
      else if (!exit.stopped)
        kills.push(`poller task ${exit.task} exited by itself (exit code ${exit.exitCode})`);
    },
  });
  let consumed: ConsumerFigures | undefined;
  const stopProgress = reportProgress(sqs, queues.dlqUrl, total, esm.deleted, options.onProgress);
  const problems: string[] = [];
  try {
    await sendAll(
      sqs,
      queues.queueUrl,
      messages.filter((m) => m.phase === 1).map((m) => m.body),
    );
    const lateWatch = waitFor(() => retries(lateKey) >= 2, timeoutMs).then(async (ok) => {
      if (!ok) problems.push('the late case never failed twice');
      await doc.send(
        new PutCommand({ TableName: table, Item: { ...caseItemKey(lateCase), stage: 'REVIEW', version: 1 } }),
      );
    });
    if (
      !(await waitFor(() => phase2After.every((key) => recorder.countOf(key, 'COMPLETED') > 0), timeoutMs))
    ) {
      problems.push('phase 1 messages did not complete in time');
    }
    await sendAll(
      sqs,
      queues.queueUrl,
      messages.filter((m) => m.phase === 2).map((m) => m.body),
    );
    const dlqWatch = waitFor(async () => (await queueCounts(sqs, queues.dlqUrl)).visible > 0, timeoutMs).then(
      (ok) => {
        if (!ok) problems.push('the never-recovering message did not reach the DLQ in time');
      },
    );
    await Promise.all([lateWatch, dlqWatch]);
    await esm
      .drain({ timeoutMs: Math.max(1000, timeoutMs - (Date.now() - started)) })
      .catch((error: Error) => {
        problems.push(error.message);
      });
  } finally {
    stopProgress();
    consumed = await esm.stop();
  }

  const dlqBodies = await peekQueue(sqs, queues.dlqUrl);
  options.onProgress?.(Math.min(total, esm.deleted() + dlqBodies.length), total);
  const items: Record<string, unknown>[] = [];
  for await (const page of paginateScan({ client: doc }, { TableName: table, ConsistentRead: true })) {
    items.push(...(page.Items ?? []));
  }
  const run = (prefix: string) => items.filter((item) => String(item.PK).startsWith(prefix));
  const inboxItems = run(`IDEMP#${runId}`);
  const quarantineItems = run('QUARANTINE#').filter(
    (item) => String(item.lastQuarantinedAt) >= new Date(started).toISOString(),
  );
  const ledger = run(`LEDGER#${runId}`);
  const caseItems = run(`CASE#${runId}`);
  const inbox = new Map(inboxItems.map((item) => [String(item.PK).slice('IDEMP#'.length), item]));
  const quarantinedKeys = new Set(quarantineItems.map((item) => item.idempotencyKey));
  const quarantinedBodies = new Set(quarantineItems.map((item) => item.body));
  const dlqKeys = dlqBodies.map((body) => keyOf(body) ?? '(undecodable)');
  const outcomes = recorder.counts();
  const byKind = countBy(messages, (m) => m.kind) as Record<ScenarioCase, number>;
  const versions = new Map(
    caseItems
      .filter((item) => item.SK === 'META')
      .map((item) => [String(item.PK).slice('CASE#'.length), Number(item.version)]),
  );
  const unaccounted = messages.filter((m) =>
    m.key && m.kind !== 'poison'
      ? inbox.get(m.key)?.status !== 'COMPLETED' && !quarantinedKeys.has(m.key) && !dlqKeys.includes(m.key)
      : !quarantinedBodies.has(m.body),
  );
  const checks: DemoCheck[] = [
    accountedCheck(unaccounted, problems, total),
    {
      name: 'one ledger entry per payment despite duplicates and crashes',
      ok: ledger.length === paymentCount,
      detail: `${ledger.length} ledger items for ${paymentCount} payments`,
    },
    duplicatesCheck(recorder.outcomes, { duplicates: byKind.duplicate, crashes: esm.deletesDropped() }),
    {
      name: 'out-of-order versions never roll back',
      ok: outOfOrder.every((caseId) => versions.get(caseId) === 3) && outcomes.STALE_VERSION_SKIPPED === 3,
      detail: `${outcomes.STALE_VERSION_SKIPPED ?? 0} stale skips; versions ${outOfOrder.map((id) => versions.get(id)).join(', ')}`,
    },
    {
      name: 'a retryable failure backs off, then succeeds',
      ok: inbox.get(lateKey)?.status === 'COMPLETED',
      detail: `${retries(lateKey)} retryable failures, then ${inbox.get(lateKey)?.status}`,
    },
    {
      name: 'poison, terminal and mismatched messages are quarantined, not retried',
      ok: quarantineItems.length === byKind.poison + byKind.terminal + byKind['same-key-different-payload'],
      detail: `${quarantineItems.length} quarantined (${Object.entries(
        countBy(quarantineItems, (item) => String(item.reasonCode)),
      )
        .map(([code, n]) => `${code} ${n}`)
        .join(', ')})`,
    },
    {
      name: 'a message that never recovers reaches the DLQ with its body intact',
      ok: dlqBodies.length === 1 && dlqBodies[0] === neverBody,
      detail: `${dlqBodies.length} in the DLQ after ${inbox.get(`${neverCase}:deadline:REVIEW`)?.attempts ?? 0} attempts`,
    },
  ];
  return {
    runId,
    runtime,
    sent: total,
    scenario: byKind,
    outcomes,
    inbox: countBy(inboxItems, (item) => String(item.status)),
    quarantine: countBy(quarantineItems, (item) => String(item.reasonCode)),
    dlq: dlqKeys,
    effects: {
      ledgerEntries: ledger.length,
      casesAdvanced: [...versions.values()].filter((version) => version > 1).length,
      deadlines: caseItems.filter((item) => String(item.SK).startsWith('DEADLINE#')).length,
      documents: 0,
    },
    payloads: { referenced: 0, offloadedByOutbox: 0, quarantined: {} },
    ...(consumed?.runtime === 'event-source-mapping'
      ? { esm: consumed.esm, function: consumed.function }
      : {}),
    ...(consumed?.runtime === 'poller' ? { poller: consumed.poller } : {}),
    kills,
    outbox: { enqueued: 0, published: 0, relayRuns: 0 },
    checks,
    durationMs: Date.now() - started,
  };
}
