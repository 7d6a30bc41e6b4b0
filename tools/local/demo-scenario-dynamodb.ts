import { randomBytes } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, PutCommand, paginateScan } from '@aws-sdk/lib-dynamodb';
import { caseItemKey } from '../../lambda/domain/dynamodb/index.ts';
import { inboxKey } from '../../lambda/stores/dynamodb/item-keys.ts';
import {
  type BigPayloadCase,
  type BigPayloadFigures,
  bigPayloadChecks,
  payloadMemoryCaseOf,
} from './big-payload-case.ts';
import { buildDemoMessages, demoMessageCount, keyOf, type ScenarioCase } from './demo-messages.ts';
import type { DemoCheck, DemoSummary } from './demo-scenario.ts';
import {
  accountedCheck,
  countBy,
  duplicatesCheck,
  payloadFigures,
  payloadRefCheck,
  quarantineCheck,
} from './demo-scenario-checks.ts';
import { type DynamoDemoOutbox, startDynamoDemoOutbox } from './demo-scenario-dynamodb-outbox.ts';
import { killRecorder } from './demo-scenario-kills.ts';
import { addPayloadRefCases, type DemoDocuments, uploadDocuments } from './demo-scenario-payload-refs.ts';
import { peekQueue, reportProgress, sendAll } from './demo-scenario-sqs.ts';
import type { FunctionSettings } from './function-host.ts';
import { type LocalQueues, queueCounts } from './local-queues.ts';
import { OutcomeRecorder } from './outcome-recorder.ts';
import type { PollerTaskSettings } from './poller-process.ts';
import { type ConsumerFigures, type ScenarioConsumer, startScenarioConsumer } from './scenario-consumer.ts';
import { scenarioVariables } from './scenario-variables.ts';
import { waitFor } from './wait-for.ts';

/** Options of {@link runDynamoDbDemoScenario}. */
export interface DynamoDbDemoScenarioOptions {
  /**
   * DynamoDB Local's client, the worker's table and its stream (`startLocalStack({ store: 'dynamodb' })`), and DynamoDB
   * Local's own endpoint for the stream.
   */
  readonly dynamodb: {
    readonly client: DynamoDBClient;
    readonly tableName: string;
    readonly streamArn: string;
    readonly streamsEndpoint: string;
  };
  /** The outbox relay's clients (`startLocalStack().clients('relay')`). @default `sqs` and `dynamodb.client` */
  readonly relay?: { readonly sqs: SQSClient; readonly dynamodb?: DynamoDBClient | undefined };
  /** @default 'us-east-1' */
  readonly region?: string;
  /** The operator's SQS client (sends, DLQ peeks). */
  readonly sqs: SQSClient;
  /**
   * S3 (the built-in fauxqs), the producers' and the demo's: adds the payloadRef cases — referenced documents (one
   * twice), a payment too large for an outbox item, offloaded by the producer's `dynamoOutboxWrite`, a wrong checksum
   * and a missing object. Without it they are left out.
   */
  readonly s3?: S3Client | undefined;
  /** The bucket of the payloadRef cases (the stack's payload bucket). @default a bucket of the run's own */
  readonly bucket?: string | undefined;
  /**
   * The payload-memory case (`--payload-mib`), as on PostgreSQL: one payloadRef of this many bytes of JSON, sent once
   * the rest drained; above the stack's `PAYLOAD_MAX_BYTES` for the memory, that limit is forced up to it. Needs S3.
   * @default none
   */
  readonly payloadBytes?: number;
  /** The component's memory is not the stage's (`--memory-mb`): the stage's payload limit is not checked against it. */
  readonly memoryOverridden?: boolean;
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
  /** Every line the worker writes (its JSON log lines among them): `npm start` writes them to the run's log file. */
  readonly onLogLine?: (line: string) => void;
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
 * - a message that never recovers (its case never exists) → the DLQ after maxReceiveCount, body intact;
 * - deadline requests take the producer path: an outbox item in the producer's transaction (`dynamoOutboxWrite`),
 *   published by the relay's code from the table's stream (the local stream mapping) → applied once;
 * - with S3, the payloadRef cases of PostgreSQL's (`addPayloadRefCases`): two documents read from S3 and verified
 *   before the handler → one `DOCUMENT#` item each (one delivered twice: DUPLICATE); a wrong checksum and a missing
 *   object → quarantined `PAYLOAD_CHECKSUM_MISMATCH`, `PAYLOAD_NOT_FOUND`; a payment too large for an outbox item →
 *   offloaded to S3 by the producer's `dynamoOutboxWrite`, published and applied once;
 * - with `payloadBytes`, the payload-memory case after the drain, as on PostgreSQL.
 *
 * Left out, being PostgreSQL's: row locks (the retryable and never-recovering cases wait for a case instead).
 */
export async function runDynamoDbDemoScenario(options: DynamoDbDemoScenarioOptions): Promise<DemoSummary> {
  const run = await openDynamoRun(options);
  const esm = await startDynamoConsumer(run);
  const { problems, consumed, outbox, bigPayload } = await driveDynamoScenario(run, esm);
  // The payload-memory case's deliveries and DLQ copy are its own (its ids start with `big-`, outside the run's).
  const bigKey = run.bigCase?.idempotencyKey;
  const dlqBodies = (await peekQueue(options.sqs, options.queues.dlqUrl)).filter(
    (body) => bigKey === undefined || keyOf(body) !== bigKey,
  );
  options.onProgress?.(Math.min(run.total, esm.deleted() + dlqBodies.length), run.total);
  const items = await readRunItems(run);
  const outcomes = run.recorder.counts((outcome) => outcome.idempotencyKey !== bigKey);
  const byKind = countBy(run.scenario.messages, (m) => m.kind) as Record<ScenarioCase, number>;
  const dlqKeys = dlqBodies.map((body) => keyOf(body) ?? '(undecodable)');
  const checks = [
    ...dynamoChecks(run, esm, problems, { dlqBodies, dlqKeys, items, outcomes, byKind, outbox }),
    ...bigPayloadChecks(bigPayload),
  ];
  const reasonCodes = items.quarantineItems.map((item) => String(item.reasonCode));
  return {
    runId: run.runId,
    runtime: run.runtime,
    sent: run.total,
    scenario: byKind,
    outcomes,
    inbox: countBy(items.inboxItems, (item) => String(item.status)),
    quarantine: countBy(reasonCodes, (code) => code),
    dlq: dlqKeys,
    effects: {
      ledgerEntries: items.ledger.length,
      casesAdvanced: [...items.versions.values()].filter((version) => version > 1).length,
      deadlines: items.caseItems.filter((item) => String(item.SK).startsWith('DEADLINE#')).length,
      documents: items.documents.length,
    },
    payloads: payloadFigures(byKind, items.offloaded.length, reasonCodes),
    ...(consumed?.runtime === 'event-source-mapping'
      ? { esm: consumed.esm, function: consumed.function }
      : {}),
    ...(consumed?.runtime === 'poller' ? { poller: consumed.poller } : {}),
    ...(bigPayload ? { bigPayload } : {}),
    kills: run.kills,
    outbox,
    checks,
    durationMs: Date.now() - run.started,
  };
}

/** A DynamoDB demo run under way, as its phases share it. */
interface DynamoRun {
  readonly options: DynamoDbDemoScenarioOptions;
  readonly started: number;
  readonly runId: string;
  readonly consumer: string;
  readonly timeoutMs: number;
  readonly runtime: 'event-source-mapping' | 'poller';
  readonly table: string;
  readonly doc: DynamoDBDocumentClient;
  readonly scenario: ReturnType<typeof buildDynamoScenario>;
  readonly total: number;
  readonly recorder: OutcomeRecorder;
  /** The kills for memory or time, as AWS reports them. */
  readonly kills: string[];
  /** The producer side: producer transactions and the stream relay. */
  readonly outbox: DynamoDemoOutbox;
  /** The payloadRef cases' documents (undefined without S3). */
  readonly documents: DemoDocuments | undefined;
  /** The payload-memory case and the variables it forces on the consumer (with `payloadBytes` and S3). */
  readonly bigCase: BigPayloadCase | undefined;
  readonly bigCaseVariables: Readonly<Record<string, string>>;
}

/** Sets a DynamoDB demo run up: its scenario, and the cases the producers already have (at version 1). */
async function openDynamoRun(options: DynamoDbDemoScenarioOptions): Promise<DynamoRun> {
  const started = Date.now();
  const runId = `r${randomBytes(3).toString('hex')}`;
  const count = demoMessageCount(options.messages);
  const table = options.dynamodb.tableName;
  const doc = DynamoDBDocumentClient.from(options.dynamodb.client);
  const { s3 } = options;
  const documents = s3 ? await uploadDocuments(s3, runId, options.bucket) : undefined;
  const scenario = buildDynamoScenario(runId, count, documents);
  const big = payloadMemoryCaseOf({
    runId,
    payloadBytes: options.payloadBytes,
    memoryOverridden: options.memoryOverridden,
    s3,
    bucket: documents?.bucket,
    worker: options.workerFunction,
    poller: options.poller,
  });

  // State the producers already have: the cases exist at version 1.
  for (const caseId of scenario.caseIds) {
    await doc.send(
      new PutCommand({
        TableName: table,
        Item: { ...caseItemKey(caseId), stage: 'INVESTIGATION', version: 1 },
      }),
    );
  }
  return {
    options,
    started,
    runId,
    consumer: options.consumer ?? 'case-worker',
    timeoutMs: options.timeoutMs ?? 90_000,
    runtime: options.runtime ?? 'event-source-mapping',
    table,
    doc,
    scenario,
    total: scenario.messages.length,
    recorder: new OutcomeRecorder(),
    kills: [],
    documents,
    bigCase: big.bigCase,
    bigCaseVariables: big.variables,
    outbox: startDynamoDemoOutbox({
      doc,
      table,
      streamArn: options.dynamodb.streamArn,
      streamsEndpoint: options.dynamodb.streamsEndpoint,
      region: options.region ?? 'us-east-1',
      relay: {
        sqs: options.relay?.sqs ?? options.sqs,
        dynamodb: options.relay?.dynamodb ?? options.dynamodb.client,
      },
      queueUrl: options.queues.queueUrl,
      ...(s3 && documents ? { offload: { s3, bucket: documents.bucket } } : {}),
    }),
  };
}

/**
 * The scenario: the messages of every store, then this store's retryable and never-recovering cases, and (with
 * documents) the payloadRef cases.
 */
function buildDynamoScenario(runId: string, count: number, documents: DemoDocuments | undefined) {
  const { messages, add, deadline, caseIds, outOfOrder, paymentCount, phase2After, crashBodies } =
    buildDemoMessages(runId, count, {
      accountId: (index) => `${runId}-acct-${index % 7}`,
      deadlinesViaOutbox: true,
    });
  // Retryable: a deadline for a case that does not exist yet; the case is created after two failed attempts.
  const lateCase = `${runId}-case-late`;
  add('retryable-then-succeeds', deadline(lateCase, 'REVIEW'));
  const lateKey = `${lateCase}:deadline:REVIEW`;
  // Never recovers: its case never exists, and its attempt budget outlasts the queue's maxReceiveCount.
  const neverCase = `${runId}-case-never`;
  const neverBody = add('never-recovers', deadline(neverCase, 'REVIEW', { maxBusinessAttempts: 100 }));
  // The payloadRef cases; their big payment takes the producer path (offloaded: too large for an outbox item).
  if (documents) addPayloadRefCases(add, runId, documents, `${runId}-payment-big`);
  return {
    messages,
    caseIds,
    outOfOrder,
    paymentCount: paymentCount + (documents ? 1 : 0),
    phase2After,
    crashBodies,
    lateCase,
    lateKey,
    neverCase,
    neverBody,
  };
}

/** Starts what consumes the run's queue (the event source mapping or the poller), with its crashes after commit. */
function startDynamoConsumer(run: DynamoRun): Promise<ScenarioConsumer> {
  const { options, scenario } = run;
  return startScenarioConsumer({
    runtime: run.runtime,
    worker: options.workerFunction,
    poller: options.poller,
    variables: {
      ...scenarioVariables(run.consumer, '', run.runtime, options.concurrency ?? 4),
      // The payload-memory case above the stack's limit: a limit `cdk synth` would refuse for this memory.
      ...run.bigCaseVariables,
    },
    sqs: options.worker?.sqs ?? options.sqs,
    inspect: options.sqs,
    queueUrl: options.queues.queueUrl,
    concurrency: options.concurrency ?? 4,
    recorder: run.recorder,
    ...(options.onLogLine ? { onLogLine: options.onLogLine } : {}),
    dropDelete: (message) => message.receiveCount === 1 && scenario.crashBodies.has(message.body),
    ...killRecorder(run.kills, run.bigCase),
  });
}

/**
 * Drives a DynamoDB demo run to its end: phase 1, the late case's creation after two failures, phase 2, the
 * never-recovering message's arrival in the DLQ, then the drain. Whatever happens, stops the progress and the
 * consumer.
 */
async function driveDynamoScenario(
  run: DynamoRun,
  esm: ScenarioConsumer,
): Promise<{
  problems: string[];
  consumed: ConsumerFigures | undefined;
  outbox: DemoSummary['outbox'];
  bigPayload: BigPayloadFigures | undefined;
}> {
  const { options, scenario, recorder, timeoutMs } = run;
  const { sqs, queues } = options;
  let consumed: ConsumerFigures | undefined;
  let outbox: DemoSummary['outbox'] = { enqueued: 0, published: 0, relayRuns: 0 };
  let bigPayload: BigPayloadFigures | undefined;
  const stopProgress = reportProgress(sqs, queues.dlqUrl, run.total, esm.deleted, options.onProgress);
  const problems: string[] = [];
  try {
    await run.outbox.produce(scenario.messages.filter((m) => m.viaOutbox).map((m) => m.body));
    await sendAll(
      sqs,
      queues.queueUrl,
      scenario.messages.filter((m) => m.phase === 1 && !m.viaOutbox).map((m) => m.body),
    );
    const lateWatch = watchLateCase(run, problems);
    if (
      !(await waitFor(
        () => scenario.phase2After.every((key) => recorder.countOf(key, 'COMPLETED') > 0),
        timeoutMs,
      ))
    ) {
      problems.push('phase 1 messages did not complete in time');
    }
    await sendAll(
      sqs,
      queues.queueUrl,
      scenario.messages.filter((m) => m.phase === 2).map((m) => m.body),
    );
    const dlqWatch = waitFor(async () => (await queueCounts(sqs, queues.dlqUrl)).visible > 0, timeoutMs).then(
      (ok) => {
        if (!ok) problems.push('the never-recovering message did not reach the DLQ in time');
      },
    );
    await Promise.all([lateWatch, dlqWatch]);
    if (!(await run.outbox.published(timeoutMs))) {
      problems.push('the outbox relay did not publish every event in time');
    }
    await esm
      .drain({ timeoutMs: Math.max(1000, timeoutMs - (Date.now() - run.started)) })
      .catch((error: Error) => {
        problems.push(error.message);
      });
    // Alone, once the rest drained: its batch holds only it, whatever becomes of it.
    bigPayload = await run.bigCase?.run({
      sqs,
      queues,
      timeoutMs: Math.max(30_000, timeoutMs - (Date.now() - run.started)),
      applied: async (key) => (await inboxItem(run, key))?.status === 'COMPLETED',
    });
  } finally {
    stopProgress();
    consumed = await esm.stop();
    outbox = await run.outbox.stop();
  }
  return { problems, consumed, outbox, bigPayload };
}

/** The inbox item of `idempotencyKey` (a consistent read). */
async function inboxItem(run: DynamoRun, idempotencyKey: string) {
  const { Item } = await run.doc.send(
    new GetCommand({
      TableName: run.table,
      Key: inboxKey(run.consumer, idempotencyKey),
      ConsistentRead: true,
    }),
  );
  return Item;
}

/** Creates the late case once its deadline failed twice (or the run's timeout passed). */
function watchLateCase(run: DynamoRun, problems: string[]): Promise<void> {
  const { scenario } = run;
  return waitFor(() => run.recorder.countOf(scenario.lateKey, 'RETRYABLE_FAILURE') >= 2, run.timeoutMs).then(
    async (ok) => {
      if (!ok) problems.push('the late case never failed twice');
      await run.doc.send(
        new PutCommand({
          TableName: run.table,
          Item: { ...caseItemKey(scenario.lateCase), stage: 'REVIEW', version: 1 },
        }),
      );
    },
  );
}

/**
 * The run's items, read with one consistent scan of the table: inbox, quarantine, ledger, cases, documents and the
 * outbox items whose payload was offloaded to S3.
 */
async function readRunItems(run: DynamoRun) {
  const items: Record<string, unknown>[] = [];
  for await (const page of paginateScan(
    { client: run.doc },
    { TableName: run.table, ConsistentRead: true },
  )) {
    items.push(...(page.Items ?? []));
  }
  const of = (prefix: string) => items.filter((item) => String(item.PK).startsWith(prefix));
  const caseItems = of(`CASE#${run.runId}`);
  return {
    inboxItems: of(`IDEMP#${run.runId}`),
    quarantineItems: of('QUARANTINE#').filter(
      (item) => String(item.lastQuarantinedAt) >= new Date(run.started).toISOString(),
    ),
    ledger: of(`LEDGER#${run.runId}`),
    caseItems,
    documents: of(`DOCUMENT#${run.runId}`),
    offloaded: of(`OUTBOX#${run.runId}`).filter(
      (item) => (JSON.parse(String(item.envelope)) as { payloadRef?: unknown }).payloadRef !== undefined,
    ),
    versions: new Map(
      caseItems
        .filter((item) => item.SK === 'META')
        .map((item) => [String(item.PK).slice('CASE#'.length), Number(item.version)]),
    ),
  };
}

/** The checks of a DynamoDB demo run, in the order the summary shows them. */
function dynamoChecks(
  run: DynamoRun,
  esm: ScenarioConsumer,
  problems: readonly string[],
  observed: {
    readonly dlqBodies: readonly string[];
    readonly dlqKeys: readonly string[];
    readonly items: Awaited<ReturnType<typeof readRunItems>>;
    readonly outcomes: DemoSummary['outcomes'];
    readonly byKind: Record<ScenarioCase, number>;
    readonly outbox: DemoSummary['outbox'];
  },
): DemoCheck[] {
  const { scenario, recorder } = run;
  const { dlqBodies, items, outcomes, byKind, outbox } = observed;
  const { ledger, versions } = items;
  const reasonCodes = items.quarantineItems.map((item) => String(item.reasonCode));
  const inbox = new Map(items.inboxItems.map((item) => [String(item.PK).slice('IDEMP#'.length), item]));
  const { outOfOrder, paymentCount, lateKey } = scenario;
  return [
    accountedCheck(unaccountedMessages(run, inbox, observed), problems, run.total),
    {
      name: 'one ledger entry per payment despite duplicates and crashes',
      ok: ledger.length === paymentCount,
      detail: `${ledger.length} ledger items for ${paymentCount} payments`,
    },
    duplicatesCheck(
      recorder.outcomes.filter((outcome) => outcome.idempotencyKey !== run.bigCase?.idempotencyKey),
      { duplicates: byKind.duplicate, crashes: esm.deletesDropped(), messages: run.scenario.messages },
    ),
    {
      name: 'out-of-order versions never roll back',
      ok: outOfOrder.every((caseId) => versions.get(caseId) === 3) && outcomes.STALE_VERSION_SKIPPED === 3,
      detail: `${outcomes.STALE_VERSION_SKIPPED ?? 0} stale skips; versions ${outOfOrder.map((id) => versions.get(id)).join(', ')}`,
    },
    {
      name: 'a retryable failure backs off, then succeeds',
      ok: inbox.get(lateKey)?.status === 'COMPLETED',
      detail: `${recorder.countOf(lateKey, 'RETRYABLE_FAILURE')} retryable failures, then ${inbox.get(lateKey)?.status}`,
    },
    quarantineCheck(reasonCodes, byKind),
    ...(run.documents
      ? [
          payloadRefCheck({
            documents: items.documents.length,
            offloaded: items.offloaded.length,
            reasonCodes,
          }),
        ]
      : []),
    {
      name: 'a message that never recovers reaches the DLQ with its body intact',
      ok: dlqBodies.length === 1 && dlqBodies[0] === scenario.neverBody,
      detail: `${dlqBodies.length} in the DLQ after ${inbox.get(`${scenario.neverCase}:deadline:REVIEW`)?.attempts ?? 0} attempts`,
    },
    outboxCheck(run, inbox, outbox),
  ];
}

/** Every event a producer wrote to the outbox is published from the stream and applied once. */
function outboxCheck(
  run: DynamoRun,
  inbox: ReadonlyMap<string, Record<string, unknown>>,
  outbox: DemoSummary['outbox'],
): DemoCheck {
  const keys = run.scenario.messages.filter((m) => m.viaOutbox).map((m) => m.key as string);
  const applied = keys.filter((key) => inbox.get(key)?.status === 'COMPLETED').length;
  return {
    name: 'every outbox event is published by the relay and applied once',
    ok:
      keys.length > 0 &&
      outbox.enqueued === keys.length &&
      outbox.published === keys.length &&
      applied === keys.length,
    detail: `${outbox.published} of ${keys.length} published from the table's stream in ${outbox.relayRuns} relay invocations, ${applied} applied`,
  };
}

/** The messages with neither their effect, nor their quarantine item, nor their DLQ copy. */
function unaccountedMessages(
  run: DynamoRun,
  inbox: ReadonlyMap<string, Record<string, unknown>>,
  observed: { readonly dlqKeys: readonly string[]; readonly items: Awaited<ReturnType<typeof readRunItems>> },
) {
  const quarantinedKeys = new Set(observed.items.quarantineItems.map((item) => item.idempotencyKey));
  const quarantinedBodies = new Set(observed.items.quarantineItems.map((item) => item.body));
  return run.scenario.messages.filter((m) =>
    m.key && m.kind !== 'poison'
      ? inbox.get(m.key)?.status !== 'COMPLETED' &&
        !quarantinedKeys.has(m.key) &&
        !observed.dlqKeys.includes(m.key)
      : !quarantinedBodies.has(m.body),
  );
}
