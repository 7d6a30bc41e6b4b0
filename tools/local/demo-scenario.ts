import { createHash, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { CreateBucketCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import {
  ChangeMessageVisibilityBatchCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import postgres from 'postgres';
import { enqueueOutbox, OUTBOX_MAX_MESSAGE_BYTES } from '../../lambda/outbox/enqueue-outbox.ts';
import { connectOptions } from '../../lambda/postgres/connect-options.ts';
import type { RoleFunction } from '../../lambda/postgres/provision-roles.ts';
import type { Envelope, PayloadRef } from '../../lambda/worker/envelope.ts';
import type { OutcomeResult, RecordOutcome } from '../../lambda/worker/outcome.ts';
import { type BigPayloadFigures, bigPayloadCase, formatMiB } from './big-payload-case.ts';
import {
  buildDemoMessages,
  demoMessageCount,
  keyOf,
  type ScenarioCase,
  type ScenarioMessage,
} from './demo-messages.ts';
import type { EventSourceMappingStats } from './event-source-mapping.ts';
import { exampleEnvelope } from './example-envelope.ts';
import type { FunctionSettings } from './function-host.ts';
import { holdCaseLock } from './hold-case-lock.ts';
import { type LocalQueues, queueCounts } from './local-queues.ts';
import { runOutboxRelayLoop } from './outbox-relay-loop.ts';
import { OutcomeRecorder } from './outcome-recorder.ts';
import type { PollerTaskSettings } from './poller-process.ts';
import { runScheduledJobs } from './run-scheduled-jobs.ts';
import {
  type ConsumerFigures,
  type FunctionFigures,
  type PollerFigures,
  startScenarioConsumer,
} from './scenario-consumer.ts';

export type { ScenarioCase } from './demo-messages.ts';

/** Options of {@link runDemoScenario}. */
export interface DemoScenarioOptions {
  /**
   * The migrated database, signed in as its owner: the demo's own setup (the cases the producers already have,
   * the row locks of its failure cases), its producers (services outside the stack) and the summary's reads.
   */
  readonly databaseUrl: string;
  /**
   * The database URL of each function's role (`startLocalStack().databaseRoles.url`): the worker (the poller and
   * the breaker's probe use its role, as deployed), the relay, the health and the retention job connect with it.
   * @default `databaseUrl` for every function
   */
  readonly databaseUrlOf?: (fn: RoleFunction) => string;
  readonly sqs: SQSClient;
  /**
   * S3 (the built-in fauxqs): adds the payloadRef cases — referenced documents (one twice), an oversized payment
   * offloaded by the outbox, a wrong checksum and a missing object. Without it they are left out.
   */
  readonly s3?: S3Client;
  /** The source queue and its DLQ (RedrivePolicy with maxReceiveCount ≥ 3). */
  readonly queues: LocalQueues;
  /**
   * The clients each component runs with (`startLocalStack().clients`): the worker (and the event source mapping,
   * which polls with the worker's role as Lambda's does), the poller and the relay get their roles' clients; `sqs`
   * and `s3` are the operator's and the producer's. @default `sqs` and `s3` for every component
   */
  readonly clients?: (component: 'worker' | 'poller' | 'relay') => {
    readonly sqs: SQSClient;
    readonly s3?: S3Client | undefined;
  };
  /** The bucket of the payloadRef cases (the stack's payload bucket). @default a bucket of the run's own */
  readonly bucket?: string;
  /** Regular messages to send, 20–100,000 (duplicates and failure cases come on top). @default 200 */
  readonly messages?: number;
  /** Invocations at once (event source mapping maximum concurrency = database pool size). @default 4 */
  readonly concurrency?: number;
  /** `worker_inbox.consumer`. @default 'case-worker' */
  readonly consumer?: string;
  /**
   * The deployed worker function pointed at the local stack (`localWorkerFunction`): the event source mapping invokes
   * it in a local function host, within its memory and timeout. Needed with runtime `event-source-mapping`.
   */
  readonly worker?: FunctionSettings;
  /** The poller's Fargate task pointed at the local stack (`localPollerTask`). Needed with runtime `poller`. */
  readonly poller?: PollerTaskSettings;
  /** Overrides the function's timeout. @default the worker function's */
  readonly functionTimeoutMs?: number;
  /**
   * The payload-memory case: one payloadRef of this many bytes of JSON, sent once the rest drained. Above the stack's
   * `PAYLOAD_MAX_BYTES` for the memory, that limit is forced up to it (and the worker runs out of memory). Needs S3.
   * @default none
   */
  readonly payloadBytes?: number;
  /** The component's memory is not the stage's (`--memory-mb`): the stage's payload limit is not checked against it. */
  readonly memoryOverridden?: boolean;
  /**
   * What consumes the queue: the local event source mapping in front of the Lambda handler, or the long-running
   * poller (`lambda/runtimes/poller/`) over the same engine. @default 'event-source-mapping'
   */
  readonly runtime?: 'event-source-mapping' | 'poller';
  /** Gives up (and fails the checks) after this long. @default 90,000 */
  readonly timeoutMs?: number;
  /** Called about ten times a second with the messages settled (deleted or moved to the DLQ) so far. */
  readonly onProgress?: (settled: number, total: number) => void;
}

/** One summary check: what must hold after the run, whether it held, and the figures. */
export interface DemoCheck {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
}

/** What {@link runDemoScenario} observed. */
export interface DemoSummary {
  readonly runId: string;
  /** SQS messages sent, duplicates and failure cases included. */
  readonly sent: number;
  /** What was sent, by scenario case. */
  readonly scenario: Readonly<Record<ScenarioCase, number>>;
  /** Per-record outcomes of the worker (every delivery counts). */
  readonly outcomes: Partial<Record<OutcomeResult, number>>;
  /** Inbox rows of this run by status. */
  readonly inbox: Readonly<Record<string, number>>;
  /** Quarantine rows of this run by reason. */
  readonly quarantine: Readonly<Record<string, number>>;
  /** Messages in the DLQ, with their idempotency keys (or `(undecodable)`). */
  readonly dlq: readonly string[];
  /** Rows the domain wrote. */
  readonly effects: {
    readonly ledgerEntries: number;
    readonly casesAdvanced: number;
    readonly deadlines: number;
    /** `documents` rows written from referenced documents. */
    readonly documents: number;
  };
  /** The payloadRef cases (zero without S3). */
  readonly payloads: {
    readonly referenced: number;
    readonly offloadedByOutbox: number;
    readonly quarantined: Readonly<Record<string, number>>;
  };
  /** The runtime that consumed the queue, and its counters. */
  readonly runtime: 'event-source-mapping' | 'poller';
  readonly esm?: EventSourceMappingStats;
  /** The worker function's memory, timeout and what its execution environments did (with the mapping). */
  readonly function?: FunctionFigures;
  /** The poller task's memory and what its tasks did. */
  readonly poller?: PollerFigures;
  /** The payload-memory case, when it ran. */
  readonly bigPayload?: BigPayloadFigures;
  /** Each kill for memory or time (and each task that exited by itself), as AWS reports it. */
  readonly kills?: readonly string[];
  /** The producer side: events written to the outbox and published by the relay loop. */
  readonly outbox: { readonly enqueued: number; readonly published: number; readonly relayRuns: number };
  readonly checks: readonly DemoCheck[];
  readonly durationMs: number;
}

const sha = (text: string) => createHash('sha256').update(text).digest('hex');

/** Builds the scenario's messages; all ids are prefixed with `runId` so runs never collide. */
function buildScenario(runId: string, count: number, documents?: DemoDocuments) {
  // Deadline requests take the producer path: outbox row in the producer's transaction, then the relay.
  const { add, stage, ...demo } = buildDemoMessages(runId, count, {
    accountId: (index) => `acct-${index % 7}`,
    deadlinesViaOutbox: true,
  });
  const lockedCase = `${runId}-case-locked`;
  const stuckCase = `${runId}-case-stuck`;
  // Retryable: the case row is locked by another transaction; released after two failed attempts.
  add('retryable-then-succeeds', stage(lockedCase, 2, 'REVIEW'));
  // Never recovers: its case stays locked until SQS has moved it to the DLQ.
  add('never-recovers', stage(stuckCase, 2, 'REVIEW'));

  // Payloads by reference: documents read from S3 and verified before the handler runs (one delivered twice),
  // a payment too large for a message that the outbox offloads, a wrong checksum and a missing object.
  const documentRequest = (documentId: string, payloadRef: PayloadRef) => {
    const { payload: _none, ...envelope } = exampleEnvelope({
      messageType: 'DocumentMetadataExtractionRequested',
      idempotencyKey: `${documentId}:extract:v1`,
      aggregateType: 'document',
      aggregateId: documentId,
      payload: {},
    });
    return { ...envelope, payloadRef };
  };
  const bigPaymentId = `${runId}-payment-big`;
  if (documents) {
    const pdf = add('payload-ref', documentRequest(`${runId}-doc-pdf`, documents.pdf));
    add('payload-ref', documentRequest(`${runId}-doc-text`, documents.text));
    add('duplicate', pdf);
    add(
      'payload-ref-broken',
      documentRequest(`${runId}-doc-tampered`, { ...documents.text, sha256: '0'.repeat(64) }),
    );
    add(
      'payload-ref-broken',
      documentRequest(`${runId}-doc-missing`, { ...documents.text, key: `${runId}/missing` }),
    );
    const big = exampleEnvelope({
      messageType: 'PaymentCaptured',
      idempotencyKey: bigPaymentId,
      aggregateType: 'Payment',
      aggregateId: bigPaymentId,
      payload: {
        paymentId: bigPaymentId,
        accountId: 'acct-big',
        amount: 1,
        currency: 'EUR',
        note: 'x'.repeat(OUTBOX_MAX_MESSAGE_BYTES),
      },
    });
    add('payload-ref', big, 1, true);
  }

  return {
    messages: demo.messages,
    caseIds: [...demo.caseIds, lockedCase, stuckCase],
    lockedKey: `${lockedCase}:stage:v2`,
    stuckKey: `${stuckCase}:stage:v2`,
    lockedCase,
    stuckCase,
    outOfOrder: demo.outOfOrder,
    phase2After: demo.phase2After,
    crashBodies: demo.crashBodies,
    paymentIds: [
      ...Array.from({ length: demo.paymentCount }, (_, i) => `${runId}-payment-${i + 1}`),
      ...(documents ? [bigPaymentId] : []),
    ],
  };
}

/** The documents the payloadRef cases refer to, uploaded to the run's bucket. */
interface DemoDocuments {
  readonly bucket: string;
  readonly pdf: PayloadRef;
  readonly text: PayloadRef;
}

/** Uploads a small PDF and a text document under the run's prefix (creating a bucket of its own without one). */
async function uploadDocuments(s3: S3Client, runId: string, given?: string): Promise<DemoDocuments> {
  const bucket = given ?? `sqs-inbox-worker-${runId}`;
  if (!given) await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  const upload = async (key: string, bytes: Buffer): Promise<PayloadRef> => {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: bytes }));
    return { bucket, key, sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.length };
  };
  const pages = Array.from({ length: 3 }, (_, i) => `${i + 3} 0 obj << /Type /Page /Parent 2 0 R >> endobj`);
  return {
    bucket,
    pdf: await upload(
      `${runId}/contract.pdf`,
      Buffer.from(
        `%PDF-1.7\n2 0 obj << /Type /Pages /Count 3 >> endobj\n${pages.join('\n')}\n%%EOF\n`,
        'latin1',
      ),
    ),
    text: await upload(`${runId}/notes.txt`, Buffer.from('first line\nsecond line\nthird line\n')),
  };
}

/**
 * Sends bodies to a queue, ten per SendMessageBatch.
 *
 * @internal
 */
export async function sendAll(sqs: SQSClient, queueUrl: string, bodies: readonly string[]): Promise<void> {
  for (let start = 0; start < bodies.length; start += 10) {
    const entries = bodies
      .slice(start, start + 10)
      .map((body, index) => ({ Id: String(index), MessageBody: body }));
    const result = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
    if (result.Failed?.length) {
      throw new Error(
        `SendMessageBatch to ${queueUrl} failed for ${result.Failed.length} entries: ${result.Failed[0]?.Message}`,
      );
    }
  }
}

/**
 * Reads every DLQ message and makes it visible again (the DLQ is left as it was).
 *
 * @internal
 */
export async function peekQueue(sqs: SQSClient, queueUrl: string): Promise<string[]> {
  const bodies: string[] = [];
  const handles: string[] = [];
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        VisibilityTimeout: 30,
      }),
    );
    if (Messages.length === 0) break;
    for (const message of Messages) {
      bodies.push(message.Body ?? '');
      handles.push(message.ReceiptHandle as string);
    }
  }
  for (let start = 0; start < handles.length; start += 10) {
    await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queueUrl,
        Entries: handles.slice(start, start + 10).map((handle, index) => ({
          Id: String(index),
          ReceiptHandle: handle,
          VisibilityTimeout: 0,
        })),
      }),
    );
  }
  return bodies;
}

/**
 * Counts `items` by `key`.
 *
 * @internal
 */
export function countBy<T>(items: readonly T[], key: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
  return counts;
}

/**
 * Calls `onProgress` about ten times a second with the messages settled so far: those `deleted` returns, and those
 * in the DLQ. Returns the function that stops it.
 *
 * @internal
 */
export function reportProgress(
  sqs: SQSClient,
  dlqUrl: string,
  total: number,
  deleted: () => number,
  onProgress?: (settled: number, total: number) => void,
): () => void {
  let dlqVisible = 0;
  const progress = setInterval(() => {
    queueCounts(sqs, dlqUrl)
      .then((counts) => {
        dlqVisible = counts.visible + counts.inFlight;
      })
      .catch(() => {});
    onProgress?.(Math.min(total, deleted() + dlqVisible), total);
  }, 100);
  return () => clearInterval(progress);
}

/**
 * The first check of every demo run: each message has its effect, its quarantine entry or its DLQ copy, and the
 * run met no other problem; what is missing is counted by scenario case.
 *
 * @internal
 */
export function accountedCheck(
  unaccounted: readonly ScenarioMessage[],
  problems: readonly string[],
  total: number,
): DemoCheck {
  const ok = unaccounted.length === 0 && problems.length === 0;
  return {
    name: 'every message is accounted for (effect, quarantine or DLQ)',
    ok,
    detail: ok
      ? `${total} sent, 0 unaccounted`
      : `${unaccounted.length} unaccounted (${Object.entries(countBy(unaccounted, (m) => m.kind))
          .map(([kind, n]) => `${kind} ${n}`)
          .join(', ')}); ${problems.join('; ') || 'no other problem'}`,
  };
}

/**
 * The duplicates check of every demo run. A DUPLICATE on a first delivery (receive count 1) can only be a
 * duplicate the scenario sent; every other one is a redelivery: a crash after commit (a dropped delete), or — on a
 * busy machine — a batch that outlasted the queue's 3 s visibility timeout, which SQS delivers again as it would in
 * AWS. So the check holds when no first delivery was wrongly a DUPLICATE and every duplicate and crash gave one; a
 * redelivery beyond those is counted, not failed (the one-effect checks prove it applied nothing twice).
 *
 * @internal
 */
export function duplicatesCheck(
  duplicates: readonly Pick<RecordOutcome, 'result' | 'receiveCount'>[],
  expected: { readonly duplicates: number; readonly crashes: number },
): DemoCheck {
  const all = duplicates.filter((outcome) => outcome.result === 'DUPLICATE');
  const first = all.filter((outcome) => outcome.receiveCount <= 1).length;
  const beyond = all.length - expected.duplicates - expected.crashes;
  return {
    name: 'duplicates and redeliveries after a crash are no-ops',
    ok: first <= expected.duplicates && beyond >= 0,
    detail: `${all.length} DUPLICATE = ${expected.duplicates} duplicates + ${expected.crashes} crashes after commit${beyond > 0 ? ` + ${beyond} redelivered after the visibility timeout` : beyond < 0 ? ` − ${-beyond} missing` : ''}${first > expected.duplicates ? `; ${first - expected.duplicates} first deliveries wrongly DUPLICATE` : ''}`,
  };
}

/**
 * Polls `predicate` every 50 ms until it holds (true) or `timeoutMs` passed (false).
 *
 * @internal
 */
export async function waitFor(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await predicate()) return true;
    await sleep(50);
  }
  return false;
}

/**
 * The variables a scenario run gives its worker over the synthesized ones, as a stage's `workerEnvironment` would:
 * the demo's database URL (its lock timeout), the consumer, a short backoff (1 to 4 s, so retries happen within the
 * run), INFO logs (the outcomes are read from them) and no EMF; for the poller, `--concurrency` records in flight with
 * as many connections, 1 s long polls and a 3 s lease.
 *
 * @internal
 */
export function scenarioVariables(
  consumer: string,
  databaseUrl: string,
  runtime: 'event-source-mapping' | 'poller',
  concurrency: number,
): Record<string, string> {
  return {
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    WORKER_CONSUMER: consumer,
    WORKER_BACKOFF_BASE_SECONDS: '1',
    WORKER_BACKOFF_MAX_SECONDS: '4',
    POWERTOOLS_LOG_LEVEL: 'INFO',
    POWERTOOLS_METRICS_DISABLED: 'true',
    ...(runtime === 'poller'
      ? {
          DB_POOL_SIZE: String(concurrency),
          WORKER_RECORD_CONCURRENCY: String(concurrency),
          POLLER_CONCURRENCY: String(concurrency),
          POLLER_BATCH_SIZE: '10',
          POLLER_WAIT_SECONDS: '1',
          POLLER_VISIBILITY_SECONDS: '3',
        }
      : {}),
  };
}

/** The check of a big payload at or below the stack's limit: applied, never killed for memory. */
function bigPayloadCheck(big: BigPayloadFigures): DemoCheck {
  const ok = big.fate === 'completed' && big.outOfMemoryKills === 0;
  return {
    name: "a payloadRef at the stack's limit is applied within the worker's memory",
    ok,
    detail: `${formatMiB(big.bytes)} (limit ${formatMiB(big.stackLimitBytes)}): ${big.fate}, peak ${big.peakMb ?? '?'} of ${big.memoryMb} MB${big.outOfMemoryKills ? `, ${big.outOfMemoryKills} killed for memory` : ''}`,
  };
}

/**
 * Runs the worker locally on a scenario that covers the pattern document's failure list, through the local
 * event source mapping and the real engine (`createWorker` + the example handlers), and checks the result:
 *
 * - normal messages (payments, stage changes, deadline requests) → one effect each;
 * - duplicates (10 % of the payments) and redeliveries after an injected crash between commit and delete
 *   (2 % of the payments) → DUPLICATE no-ops, still one ledger row per payment;
 * - the same key with a different payload → quarantined as IDEMPOTENCY_HASH_MISMATCH, the first effect kept;
 * - poison messages (not JSON, unknown type) and terminal failures (no SLA for the stage, unknown case) →
 *   quarantined and deleted from the queue;
 * - out-of-order versions (v3 applied, then v2) → STALE_VERSION_SKIPPED, no rollback;
 * - a retryable failure (its case row locked by another transaction) → backoff, then success;
 * - a message that never recovers (row locked throughout) → the DLQ after maxReceiveCount, body intact.
 *
 * @example
 * ```ts
 * const summary = await runDemoScenario({ databaseUrl, sqs, queues, messages: 200 });
 * if (summary.checks.every((check) => check.ok)) console.log('ok');
 * ```
 */
export async function runDemoScenario(options: DemoScenarioOptions): Promise<DemoSummary> {
  const started = Date.now();
  const runId = `r${randomBytes(3).toString('hex')}`;
  const count = demoMessageCount(options.messages);
  const concurrency = options.concurrency ?? 4;
  const consumer = options.consumer ?? 'case-worker';
  const timeoutMs = options.timeoutMs ?? 90_000;
  const { sqs, queues } = options;
  const urlOf = options.databaseUrlOf ?? (() => options.databaseUrl);
  const documents = options.s3 ? await uploadDocuments(options.s3, runId, options.bucket) : undefined;
  const clientsOf = options.clients ?? (() => ({ sqs, s3: options.s3 }));
  const scenario = buildScenario(runId, count, documents);
  const total = scenario.messages.length;

  // Deployed, the lock timeout is the worker role's default (5 s, see provisionRoles); the demo lowers it for its
  // worker's connections (a connection parameter in the URL) so its locked case fails in 300 ms, not 5 s.
  const workerUrl = new URL(urlOf('worker'));
  workerUrl.searchParams.set('lock_timeout', '300');
  // The demo's own side runs as the database's owner, not as a component: its setup (the cases the producers
  // already have, the transactions holding a case's row locked), its producers (services outside the stack, with
  // rights of their own, not the stack's) and the summary's reads of every table. Every component has its role.
  const side = postgres(options.databaseUrl, {
    ...connectOptions({ setting: 'DATABASE_URL', connectTimeoutSeconds: 10 }),
    max: 3,
    onnotice: () => {},
  });
  const relaySql = postgres(urlOf('relay'), {
    ...connectOptions({ setting: 'DATABASE_URL', connectTimeoutSeconds: 10 }),
    max: 1,
    onnotice: () => {},
  });
  const recorder = new OutcomeRecorder();
  const runtime = options.runtime ?? 'event-source-mapping';

  // State the producers already have: the cases exist at version 1.
  for (const caseId of scenario.caseIds) {
    await side`insert into cases (case_id, stage, version) values (${caseId}, 'INVESTIGATION', 1) on conflict do nothing`;
  }
  const releaseLocked = await holdCaseLock(side, scenario.lockedCase);
  const releaseStuck = await holdCaseLock(side, scenario.stuckCase);

  const memoryMb = options.worker?.memorySizeMb ?? options.poller?.memoryMiB ?? 0;
  const stackLimitBytes = Number(
    (options.worker?.environment ?? options.poller?.environment)?.PAYLOAD_MAX_BYTES ?? 0,
  );
  const bigCase =
    options.payloadBytes && options.s3 && documents
      ? bigPayloadCase({
          runId,
          bytes: options.payloadBytes,
          stackLimitBytes,
          memoryMb,
          memoryOverridden: options.memoryOverridden,
          s3: options.s3,
          bucket: documents.bucket,
        })
      : undefined;
  /** The kills for memory or time, as AWS reports them. */
  const kills: string[] = [];
  const esm = await startScenarioConsumer({
    runtime,
    worker: options.worker,
    poller: options.poller,
    variables: {
      ...scenarioVariables(consumer, workerUrl.toString(), runtime, concurrency),
      // The payload-memory case above the stack's limit: a limit `cdk synth` would refuse for this memory.
      ...(bigCase && options.payloadBytes && options.payloadBytes > stackLimitBytes
        ? { PAYLOAD_MAX_BYTES: String(options.payloadBytes) }
        : {}),
    },
    sqs: clientsOf('worker').sqs,
    inspect: sqs,
    queueUrl: queues.queueUrl,
    concurrency,
    recorder,
    dropDelete: (message) => message.receiveCount === 1 && scenario.crashBodies.has(message.body),
    functionTimeoutMs: options.functionTimeoutMs,
    onInvocation: (report) => {
      bigCase?.onInvocation(report);
      if (report.reason === 'out-of-memory' || report.reason === 'timeout')
        kills.push(`${report.detail} (${report.errorType}); ${report.function?.report ?? ''}`);
    },
    onTaskExit: (exit) => {
      bigCase?.onTaskExit(exit);
      if (exit.outOfMemory)
        kills.push(
          `poller task ${exit.task} stopped: ${exit.stoppedReason} (exit code ${exit.exitCode}), peak ${exit.peakMiB} MiB`,
        );
      else if (!exit.stopped)
        kills.push(`poller task ${exit.task} exited by itself (exit code ${exit.exitCode})`);
    },
  }).catch(async (error: unknown) => {
    await releaseLocked().catch(() => {});
    await releaseStuck().catch(() => {});
    await Promise.all([side.end({ timeout: 5 }), relaySql.end({ timeout: 5 })]);
    throw error;
  });
  const stopProgress = reportProgress(sqs, queues.dlqUrl, total, esm.deleted, options.onProgress);

  // The producer side runs too: the relay loop publishes what producer transactions wrote to the outbox.
  const stopRelay = new AbortController();
  const relay = runOutboxRelayLoop({
    sql: relaySql,
    sqs: clientsOf('relay').sqs,
    queueUrl: queues.queueUrl,
    signal: stopRelay.signal,
    idleMs: 100,
    relayId: `${runId}-relay`,
  });
  const outboxMessages = scenario.messages.filter((m) => m.viaOutbox);
  const outboxKeys = outboxMessages.map((m) => m.key as string);

  const problems: string[] = [];
  let bigPayload: BigPayloadFigures | undefined;
  let consumed: ConsumerFigures | undefined;
  try {
    // Producer transactions: each enqueues its event atomically with whatever state change it makes.
    for (const message of outboxMessages) {
      // A payload too large for a message goes to S3; the row carries its payloadRef.
      const offload = options.s3 && documents ? { s3: options.s3, bucket: documents.bucket } : undefined;
      await side.begin((tx) => enqueueOutbox(tx, JSON.parse(message.body) as Envelope, { offload }));
    }
    await sendAll(
      sqs,
      queues.queueUrl,
      scenario.messages.filter((m) => m.phase === 1 && !m.viaOutbox).map((m) => m.body),
    );
    const lockWatch = waitFor(
      () => recorder.countOf(scenario.lockedKey, 'RETRYABLE_FAILURE') >= 2,
      timeoutMs,
    ).then(async (ok) => {
      if (!ok) problems.push('the locked case never failed twice');
      await releaseLocked();
    });
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
    const stuckWatch = waitFor(
      async () => (await queueCounts(sqs, queues.dlqUrl)).visible > 0,
      timeoutMs,
    ).then(async (ok) => {
      if (!ok) problems.push('the stuck message did not reach the DLQ in time');
      await releaseStuck();
    });
    const published = await waitFor(async () => {
      const [row] = await side<{ pending: number }[]>`
        select count(*)::int as pending from outbox_events
        where idempotency_key in ${side(outboxKeys)} and status = 'PENDING'
      `;
      return row?.pending === 0;
    }, timeoutMs);
    if (!published) problems.push('the outbox relay did not publish every event in time');
    await esm
      .drain({ timeoutMs: Math.max(1000, timeoutMs - (Date.now() - started)) })
      .catch((error: Error) => {
        problems.push(error.message);
      });
    await Promise.all([lockWatch, stuckWatch]);
    // Alone, once the rest drained: its batch holds only it, whatever becomes of it.
    bigPayload = await bigCase?.run({
      sqs,
      queueUrl: queues.queueUrl,
      side,
      consumer,
      timeoutMs: Math.max(30_000, timeoutMs - (Date.now() - started)),
      waitFor,
      dlqCount: async () => {
        const counts = await queueCounts(sqs, queues.dlqUrl);
        return counts.visible + counts.inFlight;
      },
    });
  } finally {
    stopProgress();
    stopRelay.abort();
    consumed = await esm.stop();
    await releaseLocked().catch(() => {});
    await releaseStuck().catch(() => {});
  }

  const jobs = await runScheduledJobs(urlOf, consumer);
  const roleOf = async (client: postgres.Sql) =>
    (await client<{ role: string }[]>`select current_user as role`)[0]?.role ?? '?';
  // The worker (or poller) runs in its own processes: the role its DATABASE_URL signs in as.
  const consumerSql = postgres(workerUrl.toString(), { max: 1, connect_timeout: 10, onnotice: () => {} });
  const consumerRole = await roleOf(consumerSql).finally(() => consumerSql.end({ timeout: 5 }));
  const consumerRoles = `${runtime === 'poller' ? 'poller' : 'worker'} ${consumerRole}, relay ${await roleOf(relaySql)}`;
  const dlqBodies = await peekQueue(sqs, queues.dlqUrl);
  options.onProgress?.(Math.min(total, esm.deleted() + dlqBodies.length), total);
  const prefix = `${runId}%`;
  const inboxRows = await side<{ idempotency_key: string; status: string; receive_count: number }[]>`
    select idempotency_key, status, receive_count from worker_inbox
    where consumer = ${consumer} and idempotency_key like ${prefix}
  `;
  const quarantineRows = await side<
    { idempotency_key: string | null; reason_code: string; body_hash: string }[]
  >`
    select idempotency_key, reason_code, body_hash from worker_quarantine
    where consumer = ${consumer} and (idempotency_key like ${prefix} or first_quarantined_at >= ${new Date(started)})
  `;
  const [ledger] = await side<{ entries: number; payments: number }[]>`
    select count(*)::int as entries, count(distinct source_event_id)::int as payments
    from ledger_entries where source_event_id like ${prefix}
  `;
  const caseRows = await side<{ case_id: string; version: number; stage: string }[]>`
    select case_id, version, stage from cases where case_id like ${prefix}
  `;
  const [deadlines] = await side<{ count: number }[]>`
    select count(*)::int as count from case_deadlines where case_id like ${prefix}
  `;
  const [documentRows] = await side<{ count: number }[]>`
    select count(*)::int as count from documents where document_id like ${prefix}
  `;
  const [offloaded] = await side<{ count: number }[]>`
    select count(*)::int as count from outbox_events
    where idempotency_key in ${side(outboxKeys)} and envelope ? 'payloadRef'
  `;
  const relayTotals = await relay;
  const [outbox] = await side<{ enqueued: number; published: number; with_id: number }[]>`
    select count(*)::int as enqueued, count(*) filter (where status = 'PUBLISHED')::int as published,
           count(sqs_message_id)::int as with_id
    from outbox_events where idempotency_key in ${side(outboxKeys)}
  `;
  await Promise.all([side.end({ timeout: 5 }), relaySql.end({ timeout: 5 })]);

  const inbox = new Map(inboxRows.map((row) => [row.idempotency_key, row]));
  const quarantinedKeys = new Set(quarantineRows.map((row) => row.idempotency_key));
  const quarantinedBodies = new Set(quarantineRows.map((row) => row.body_hash));
  const scenarioDlq = dlqBodies.filter((body) => !bigCase || keyOf(body) !== bigCase.idempotencyKey);
  const dlqKeys = scenarioDlq.map((body) => keyOf(body) ?? '(undecodable)');
  // The big payload's deliveries are its own case's (a kill after its commit makes its redelivery a DUPLICATE).
  const outcomes = recorder.counts((outcome) => outcome.idempotencyKey !== bigCase?.idempotencyKey);
  const byKind = countBy(scenario.messages, (m) => m.kind) as Record<ScenarioCase, number>;
  const versions = new Map(caseRows.map((row) => [row.case_id, row.version]));
  const stuckBody = scenario.messages.find((m) => m.key === scenario.stuckKey)?.body;

  const unaccounted = scenario.messages.filter((m) =>
    m.key && m.kind !== 'poison'
      ? inbox.get(m.key)?.status !== 'COMPLETED' && !quarantinedKeys.has(m.key) && !dlqKeys.includes(m.key)
      : !quarantinedBodies.has(sha(m.body)),
  );
  const checks: DemoCheck[] = [
    accountedCheck(unaccounted, problems, total),
    {
      name: 'every outbox event is published by the relay and applied once',
      ok:
        outbox?.enqueued === outboxKeys.length &&
        outbox?.published === outboxKeys.length &&
        outbox?.with_id === outboxKeys.length &&
        outboxKeys.every((key) => inbox.get(key)?.status === 'COMPLETED'),
      detail: `${outbox?.published ?? 0} of ${outboxKeys.length} published in ${relayTotals.runs} relay runs, ${
        outboxKeys.filter((key) => inbox.get(key)?.status === 'COMPLETED').length
      } completed`,
    },
    {
      name: 'one ledger entry per payment despite duplicates and crashes',
      ok: ledger?.entries === scenario.paymentIds.length && ledger?.payments === scenario.paymentIds.length,
      detail: `${ledger?.entries} entries for ${scenario.paymentIds.length} payments`,
    },
    duplicatesCheck(
      recorder.outcomes.filter((outcome) => outcome.idempotencyKey !== bigCase?.idempotencyKey),
      { duplicates: byKind.duplicate, crashes: esm.deletesDropped() },
    ),
    {
      name: 'out-of-order versions never roll back',
      ok:
        scenario.outOfOrder.every((caseId) => versions.get(caseId) === 3) &&
        outcomes.STALE_VERSION_SKIPPED === 3,
      detail: `${outcomes.STALE_VERSION_SKIPPED ?? 0} stale skips; versions ${scenario.outOfOrder.map((id) => versions.get(id)).join(', ')}`,
    },
    {
      name: 'a retryable failure backs off, then succeeds',
      ok: inbox.get(scenario.lockedKey)?.status === 'COMPLETED' && versions.get(scenario.lockedCase) === 2,
      detail: `${recorder.countOf(scenario.lockedKey, 'RETRYABLE_FAILURE')} retryable failures, then ${inbox.get(scenario.lockedKey)?.status}`,
    },
    {
      name: 'poison, terminal and mismatched messages are quarantined, not retried',
      ok:
        quarantineRows.length ===
        byKind.poison +
          byKind.terminal +
          byKind['same-key-different-payload'] +
          (byKind['payload-ref-broken'] ?? 0),
      detail: `${quarantineRows.length} quarantined (${Object.entries(
        countBy(quarantineRows, (r) => r.reason_code),
      )
        .map(([code, n]) => `${code} ${n}`)
        .join(', ')})`,
    },
    ...(documents
      ? [
          {
            name: 'referenced payloads: verified before the handler, stored once, bad references quarantined',
            ok:
              documentRows?.count === 2 &&
              offloaded?.count === 1 &&
              quarantineRows.filter((r) => r.reason_code === 'PAYLOAD_CHECKSUM_MISMATCH').length === 1 &&
              quarantineRows.filter((r) => r.reason_code === 'PAYLOAD_NOT_FOUND').length === 1,
            detail: `${documentRows?.count ?? 0} documents, ${offloaded?.count ?? 0} outbox event offloaded to S3, ${
              quarantineRows.filter((r) => r.reason_code.startsWith('PAYLOAD_')).length
            } bad references quarantined`,
          },
        ]
      : []),
    {
      name: 'each component runs as its database role',
      ok: jobs.problems.length === 0,
      detail: `${consumerRoles}; ${jobs.problems.length === 0 ? jobs.detail : jobs.problems.join('; ')}`,
    },
    {
      name: 'a message that never recovers reaches the DLQ with its body intact',
      ok: scenarioDlq.length === 1 && scenarioDlq[0] === stuckBody,
      detail: `${scenarioDlq.length} in the DLQ after ${inbox.get(scenario.stuckKey)?.receive_count ?? 0} attempts`,
    },
    // A run of a setting `cdk synth` refuses shows what becomes of it (the figures), it is not checked.
    ...(bigPayload && !bigPayload.unsafe ? [bigPayloadCheck(bigPayload)] : []),
  ];

  return {
    runId,
    sent: total,
    scenario: byKind,
    outcomes,
    inbox: countBy(inboxRows, (row) => row.status),
    quarantine: countBy(quarantineRows, (row) => row.reason_code),
    dlq: dlqKeys,
    effects: {
      ledgerEntries: ledger?.entries ?? 0,
      casesAdvanced: caseRows.filter((row) => row.version > 1).length,
      deadlines: deadlines?.count ?? 0,
      documents: documentRows?.count ?? 0,
    },
    payloads: {
      referenced: (byKind['payload-ref'] ?? 0) + (byKind['payload-ref-broken'] ?? 0),
      offloadedByOutbox: offloaded?.count ?? 0,
      quarantined: countBy(
        quarantineRows.filter((row) => row.reason_code.startsWith('PAYLOAD_')),
        (row) => row.reason_code,
      ),
    },
    runtime,
    ...(consumed?.runtime === 'event-source-mapping'
      ? { esm: consumed.esm, function: consumed.function }
      : {}),
    ...(consumed?.runtime === 'poller' ? { poller: consumed.poller } : {}),
    ...(bigPayload ? { bigPayload } : {}),
    kills,
    outbox: {
      enqueued: outbox?.enqueued ?? 0,
      published: outbox?.published ?? 0,
      relayRuns: relayTotals.runs,
    },
    checks,
    durationMs: Date.now() - started,
  };
}
