import type { S3Client } from '@aws-sdk/client-s3';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { RoleFunction } from '../../lambda/postgres/provision-roles.ts';
import type { OutcomeResult } from '../../lambda/worker/outcome.ts';
import type { BigPayloadFigures } from './big-payload-case.ts';
import type { ContentionFigures } from './contention-case.ts';
import type { ScenarioCase } from './demo-messages.ts';
import { countBy, payloadFigures } from './demo-scenario-checks.ts';
import { type DrivenScenario, drivePostgresScenario } from './demo-scenario-drive.ts';
import { type PostgresFacts, postgresChecks, postgresFacts } from './demo-scenario-postgres-checks.ts';
import { type PostgresConsumer, startPostgresConsumer } from './demo-scenario-postgres-consumer.ts';
import { type PostgresResults, readPostgresResults } from './demo-scenario-results.ts';
import { openPostgresRun, type PostgresRun } from './demo-scenario-run.ts';
import type { EventSourceMappingStats } from './event-source-mapping.ts';
import type { FunctionSettings } from './function-host.ts';
import type { LocalQueues } from './local-queues.ts';
import type { PollerTaskSettings } from './poller-process.ts';
import type { FunctionFigures, PollerFigures } from './scenario-consumer.ts';

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
  /** Every line the worker writes (its JSON log lines among them): `npm start` writes them to the run's log file. */
  readonly onLogLine?: (line: string) => void;
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
  /** The adaptive limit's contention case (a locked hot case), when it ran. */
  readonly contention?: ContentionFigures;
  /** Each kill for memory or time (and each task that exited by itself), as AWS reports it. */
  readonly kills?: readonly string[];
  /** The producer side: events written to the outbox and published by the relay loop. */
  readonly outbox: { readonly enqueued: number; readonly published: number; readonly relayRuns: number };
  readonly checks: readonly DemoCheck[];
  readonly durationMs: number;
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
 * - a message that never recovers (row locked throughout) → the DLQ after maxReceiveCount, body intact;
 * - contention (a hot case locked while its stage changes arrive) → the adaptive limit drops, then recovers.
 *
 * @example
 * ```ts
 * const summary = await runDemoScenario({ databaseUrl, sqs, queues, messages: 200 });
 * if (summary.checks.every((check) => check.ok)) console.log('ok');
 * ```
 */
export async function runDemoScenario(options: DemoScenarioOptions): Promise<DemoSummary> {
  const run = await openPostgresRun(options);
  const consumer = await startPostgresConsumer(run);
  const driven = await drivePostgresScenario(run, consumer);
  const results = await readPostgresResults(run, consumer.esm, driven);
  const facts = postgresFacts(run, results, consumer.bigCase);
  const checks = postgresChecks(run, consumer, driven, results, facts);
  return postgresSummary(run, consumer, driven, results, facts, checks);
}

/** The summary of a PostgreSQL demo run, from what it observed. */
function postgresSummary(
  run: PostgresRun,
  { kills }: PostgresConsumer,
  { consumed, bigPayload, contention }: DrivenScenario,
  results: PostgresResults,
  { byKind, outcomes, dlqKeys }: PostgresFacts,
  checks: readonly DemoCheck[],
): DemoSummary {
  const { inboxRows, quarantineRows, ledger, caseRows, deadlines, documentRows, offloaded, outbox } = results;
  return {
    runId: run.runId,
    sent: run.total,
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
    payloads: payloadFigures(
      byKind,
      offloaded?.count ?? 0,
      quarantineRows.map((row) => row.reason_code),
    ),
    runtime: run.runtime,
    ...(consumed?.runtime === 'event-source-mapping'
      ? { esm: consumed.esm, function: consumed.function }
      : {}),
    ...(consumed?.runtime === 'poller' ? { poller: consumed.poller } : {}),
    ...(bigPayload ? { bigPayload } : {}),
    ...(contention ? { contention } : {}),
    kills,
    outbox: {
      enqueued: outbox?.enqueued ?? 0,
      published: outbox?.published ?? 0,
      relayRuns: results.relayTotals.runs,
    },
    checks,
    durationMs: Date.now() - run.started,
  };
}
