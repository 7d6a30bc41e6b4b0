import { randomBytes } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, PutCommand, paginateScan } from '@aws-sdk/lib-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { caseItemKey, exampleDynamoHandlers } from '../../lambda/domain/dynamodb/index.ts';
import { createDynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import { createWorker } from '../../lambda/worker/create-worker.ts';
import {
  type DemoCheck,
  type DemoSummary,
  peekQueue,
  type ScenarioCase,
  sendAll,
  waitFor,
} from './demo-scenario.ts';
import { startEventSourceMapping } from './event-source-mapping.ts';
import { exampleEnvelope } from './example-envelope.ts';
import { type LocalQueues, queueCounts } from './local-queues.ts';
import { OutcomeRecorder } from './outcome-recorder.ts';

/** Options of {@link runDynamoDbDemoScenario}. */
export interface DynamoDbDemoScenarioOptions {
  /** DynamoDB Local's client and the worker's table (`startLocalStack({ store: 'dynamodb' })`). */
  readonly dynamodb: { readonly client: DynamoDBClient; readonly tableName: string };
  readonly sqs: SQSClient;
  /** The source queue and its DLQ (RedrivePolicy with maxReceiveCount ≥ 3). */
  readonly queues: LocalQueues;
  /** Regular messages to send, 20–100,000. @default 200 */
  readonly messages?: number;
  /** Invocations at once. @default 4 */
  readonly concurrency?: number;
  /** @default 'case-worker' */
  readonly consumer?: string;
  /** @default 90,000 */
  readonly timeoutMs?: number;
  readonly onProgress?: (settled: number, total: number) => void;
}

interface Message {
  readonly body: string;
  readonly kind: ScenarioCase;
  readonly key?: string;
  readonly phase: 1 | 2;
}

/**
 * `npm start -- --store dynamodb`: the scenario of `runDemoScenario` on the DynamoDB store (DynamoDB Local, the
 * example domain's DynamoDB handlers), through the local event source mapping and the real engine, with the same
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
  const count = options.messages ?? 200;
  if (!Number.isInteger(count) || count < 20 || count > 100_000) {
    throw new Error(`messages must be a whole number from 20 to 100000 (given ${count})`);
  }
  const consumer = options.consumer ?? 'case-worker';
  const timeoutMs = options.timeoutMs ?? 90_000;
  const { sqs, queues } = options;
  const table = options.dynamodb.tableName;
  const doc = DynamoDBDocumentClient.from(options.dynamodb.client);

  // The scenario.
  const keyOf = (body: string) => {
    try {
      return (JSON.parse(body) as { idempotencyKey?: string }).idempotencyKey;
    } catch {
      return undefined;
    }
  };
  const messages: Message[] = [];
  const add = (kind: ScenarioCase, envelope: object | string, phase: 1 | 2 = 1) => {
    const body = typeof envelope === 'string' ? envelope : JSON.stringify(envelope);
    const key = keyOf(body);
    messages.push({ body, kind, key, phase });
    return body;
  };
  const stage = (caseId: string, version: number, stageName: string) =>
    exampleEnvelope({
      messageType: 'CaseStageChanged',
      idempotencyKey: `${caseId}:stage:v${version}`,
      aggregateType: 'Case',
      aggregateId: caseId,
      payload: { caseId, stage: stageName, version },
    });
  const deadline = (caseId: string, stageName: string, attemptPolicy?: object) => ({
    ...exampleEnvelope({
      messageType: 'CaseDeadlineCalculationRequested',
      idempotencyKey: `${caseId}:deadline:${stageName}`,
      aggregateType: 'Case',
      aggregateId: caseId,
      payload: { caseId, stage: stageName, effectiveAt: '2026-07-06T10:15:30Z' },
    }),
    ...(attemptPolicy ? { attemptPolicy } : {}),
  });
  const payment = (index: number, amount = 10 + (index % 90)) =>
    exampleEnvelope({
      messageType: 'PaymentCaptured',
      idempotencyKey: `${runId}-payment-${index}`,
      aggregateType: 'Payment',
      aggregateId: `${runId}-payment-${index}`,
      payload: {
        paymentId: `${runId}-payment-${index}`,
        accountId: `${runId}-acct-${index % 7}`,
        amount,
        currency: 'EUR',
      },
    });
  const caseIds = Array.from(
    { length: Math.max(5, Math.floor(count / 10)) },
    (_, i) => `${runId}-case-${i + 1}`,
  );
  const outOfOrder = caseIds.slice(0, 3);
  for (const caseId of outOfOrder) add('out-of-order', stage(caseId, 3, 'REVIEW'));
  for (const caseId of outOfOrder) add('out-of-order', stage(caseId, 2, 'INVESTIGATION'), 2);
  const deadlines = caseIds
    .slice(3)
    .flatMap((caseId) => [deadline(caseId, 'INVESTIGATION'), deadline(caseId, 'REVIEW')]);
  const payments: string[] = [];
  let paymentIndex = 0;
  for (let i = 0; i < count - outOfOrder.length * 2; i += 1) {
    const next = i % 5 === 1 ? deadlines.shift() : undefined;
    if (next) add('normal', next);
    else payments.push(add('normal', payment(++paymentIndex)));
  }
  for (const body of payments.filter((_, i) => i % 10 === 3)) add('duplicate', body);
  add('same-key-different-payload', payment(1, 999_999), 2);
  add('poison', `{"messageId": "${runId}-broken", this is not json`);
  add(
    'poison',
    exampleEnvelope({
      messageType: 'CaseArchivedV0',
      idempotencyKey: `${runId}-unknown-type`,
      aggregateType: 'Case',
      aggregateId: 'x',
      payload: {},
    }),
  );
  add('terminal', deadline(caseIds[3] as string, 'CLOSED'));
  add('terminal', deadline(`${runId}-case-missing`, 'REVIEW', { terminalAfterCodes: ['CASE_NOT_FOUND'] }));
  // Retryable: a deadline for a case that does not exist yet; the case is created after two failed attempts.
  const lateCase = `${runId}-case-late`;
  add('retryable-then-succeeds', deadline(lateCase, 'REVIEW'));
  const lateKey = `${lateCase}:deadline:REVIEW`;
  // Never recovers: its case never exists, and its attempt budget outlasts the queue's maxReceiveCount.
  const neverCase = `${runId}-case-never`;
  const neverBody = add('never-recovers', deadline(neverCase, 'REVIEW', { maxBusinessAttempts: 100 }));
  const crashBodies = new Set(payments.filter((_, i) => i % 50 === 7));
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
  const handler = createWorker({
    consumer,
    handlers: exampleDynamoHandlers,
    store: createDynamoStore({ client: options.dynamodb.client, tableName: table }),
    sqs,
    logger: new Logger({ serviceName: consumer, logLevel: 'SILENT' }),
    metrics: new Metrics({ namespace: 'SqsInboxWorkerLocal', serviceName: consumer }),
    onOutcome: recorder.onOutcome,
    recordConcurrency: 4,
    backoff: { baseSeconds: 1, maxSeconds: 4 },
  });
  const completed = (key: string) =>
    recorder.outcomes.some((outcome) => outcome.idempotencyKey === key && outcome.result === 'COMPLETED');
  const retries = (key: string) =>
    recorder.outcomes.filter(
      (outcome) => outcome.idempotencyKey === key && outcome.result === 'RETRYABLE_FAILURE',
    ).length;

  let dlqVisible = 0;
  const esm = await startEventSourceMapping({
    sqs,
    queueUrl: queues.queueUrl,
    handler,
    functionName: consumer,
    batchSize: 10,
    maxBatchingWindowMs: 50,
    maxConcurrency: options.concurrency ?? 4,
    pollers: 2,
    waitTimeSeconds: 1,
    functionTimeoutMs: 5000,
    hooks: {
      dropDeleteAfterSuccess: (record: SQSRecord) =>
        record.attributes.ApproximateReceiveCount === '1' && crashBodies.has(record.body),
    },
  });
  const progress = setInterval(() => {
    queueCounts(sqs, queues.dlqUrl)
      .then((counts) => {
        dlqVisible = counts.visible + counts.inFlight;
      })
      .catch(() => {});
    options.onProgress?.(Math.min(total, esm.stats.deleted + dlqVisible), total);
  }, 100);
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
    const phase2After = [...outOfOrder.map((caseId) => `${caseId}:stage:v3`), `${runId}-payment-1`];
    if (!(await waitFor(() => phase2After.every(completed), timeoutMs))) {
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
    clearInterval(progress);
    await esm.stop();
  }

  const dlqBodies = await peekQueue(sqs, queues.dlqUrl);
  options.onProgress?.(Math.min(total, esm.stats.deleted + dlqBodies.length), total);
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
  const countBy = <T>(list: readonly T[], key: (item: T) => string) => {
    const counts: Record<string, number> = {};
    for (const item of list) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
    return counts;
  };
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
    {
      name: 'every message is accounted for (effect, quarantine or DLQ)',
      ok: unaccounted.length === 0 && problems.length === 0,
      detail:
        unaccounted.length === 0 && problems.length === 0
          ? `${total} sent, 0 unaccounted`
          : `${unaccounted.length} unaccounted (${Object.entries(countBy(unaccounted, (m) => m.kind))
              .map(([kind, n]) => `${kind} ${n}`)
              .join(', ')}); ${problems.join('; ') || 'no other problem'}`,
    },
    {
      name: 'one ledger entry per payment despite duplicates and crashes',
      ok: ledger.length === paymentIndex,
      detail: `${ledger.length} ledger items for ${paymentIndex} payments`,
    },
    {
      name: 'duplicates and redeliveries after a crash are no-ops',
      ok: outcomes.DUPLICATE === byKind.duplicate + esm.stats.deletesDropped,
      detail: `${outcomes.DUPLICATE ?? 0} DUPLICATE = ${byKind.duplicate} duplicates + ${esm.stats.deletesDropped} crashes after commit`,
    },
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
    runtime: 'event-source-mapping',
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
    esm: { ...esm.stats },
    outbox: { enqueued: 0, published: 0, relayRuns: 0 },
    checks,
    durationMs: Date.now() - started,
  };
}
