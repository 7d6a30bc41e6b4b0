import { randomBytes } from 'node:crypto';
import type postgres from 'postgres';
import type { CanaryStore } from './canary-store.ts';
import { type AlarmTopicTarget, checkAlarmTopic } from './check-alarm-topic.ts';
import { type BreakerTarget, checkBreakerClosed } from './check-breaker-closed.ts';
import { checkProxyPinning, type MetricReader, type PinningTarget } from './check-proxy-pinning.ts';
import { checkWorkerPrivileges } from './check-worker-privileges.ts';
import type { Clock } from './clock.ts';
import type { SqsSender } from './collaborators.ts';
import { FailedChecksError } from './errors.ts';
import type { OpsOutput } from './output.ts';
import { emit, table } from './output.ts';
import { readQueueAttributes } from './read-queue-attributes.ts';
import { sampleWorkerSessions, type WorkerSessions } from './sample-worker-sessions.ts';
import { canary } from './send-canary.ts';
import {
  type CanaryRun,
  checkApplied,
  checkDlq,
  checkDuplicate,
  checkPoison,
  type Settled,
} from './smoke-canary-checks.ts';
import { fail, pass, SMOKE_CHECKS, type SmokeCheck, skip } from './smoke-check.ts';

/** Collaborators of {@link smoke}. */
export interface SmokeDeps {
  readonly sqs: SqsSender;
  readonly out: OpsOutput;
  readonly clock: Clock;
  /** The worker's store: the canaries' inbox and quarantine state (PostgreSQL or DynamoDB). */
  readonly store: CanaryStore;
  /** PostgreSQL: the ops client, for the privilege check and, locally, the worker's sessions. */
  readonly sql?: postgres.Sql;
  readonly alarmTopic: AlarmTopicTarget;
  readonly breaker: BreakerTarget;
  /** PostgreSQL in AWS: RDS Proxy's metrics. Without it (locally) the worker's sessions are sampled instead. */
  readonly proxyMetrics?: { readonly proxyName: string | undefined; readonly cloudWatch: MetricReader };
}

/** Options of {@link smoke}. */
export interface SmokeOptions {
  /** The stage's name (cdk.json), shown in the output. */
  readonly stage: string;
  readonly consumer: string;
  readonly queueUrl: string;
  readonly dlqUrl: string | undefined;
  /** Against the local stack (`npm start -- --keep`): control-plane checks are skipped, sessions sampled. */
  readonly local: boolean;
  /** Deadline of the whole run's waits, ms. */
  readonly timeoutMs: number;
  /** Do not send the never-recovering canary (its DLQ check is a SKIP). */
  readonly skipDlq: boolean;
  /** The worker's database user to check (PostgreSQL). */
  readonly workerDbUser: string;
  /** The stage's terminalPolicy: with `dlq` nothing is quarantined and the poison canary is not sent. */
  readonly terminalPolicy?: 'quarantine' | 'dlq';
  /** How often the waits look. @default 500 */
  readonly pollMs?: number;
  /** @default a random `s<8 hex>` */
  readonly runId?: string;
}

/** What {@link smoke} prints (`--json`). */
export interface SmokeResult {
  readonly runId: string;
  readonly stage: string;
  readonly store: 'postgres' | 'dynamodb';
  readonly queueUrl: string;
  readonly passed: boolean;
  readonly durationMs: number;
  readonly checks: readonly SmokeCheck[];
}

/**
 * `sqs-worker smoke`: the step after every deploy. Sends canary envelopes (message type `SqsInboxWorkerCanary`, keys
 * `canary:<runId>:<mode>`, handled by the canary handler every worker registers) through the real queue and worker and
 * checks, in a table `CHECK | RESULT | DETAIL`: a canary applied once, its duplicate a no-op, a poison canary
 * quarantined, a never-recovering canary reaching the DLQ (unless `skipDlq`), the alarm topic's confirmed
 * subscription, the breaker closed, and on PostgreSQL the proxy's pinned sessions and the worker role's privileges.
 * Then it removes what it can of its own state. Every wait polls a condition until `timeoutMs`.
 *
 * @throws FailedChecksError (exit 1) after printing, when a check FAILed.
 *
 * @example
 * ```ts
 * await smoke({ sqs, out, clock, store: postgresCanaryStore(sql, 'case-worker'), sql, alarmTopic, breaker },
 *   { stage: 'dev', consumer: 'case-worker', queueUrl, dlqUrl, local: true, timeoutMs: 120_000, skipDlq: false,
 *     workerDbUser: 'sqs_worker' });
 * ```
 */
export async function smoke(deps: SmokeDeps, options: SmokeOptions): Promise<SmokeResult> {
  const started = deps.clock.now();
  const runId = options.runId ?? `s${randomBytes(4).toString('hex')}`;
  const pollMs = options.pollMs ?? 500;
  const queue = await readQueueAttributes(deps.sqs, options.queueUrl);
  const run: CanaryRun = {
    sqs: deps.sqs,
    clock: deps.clock,
    store: deps.store,
    queueUrl: options.queueUrl,
    fifo: queue.fifo,
    runId,
    deadlineMs: started.getTime() + options.timeoutMs,
    pollMs,
  };
  const sampler =
    deps.sql && !deps.proxyMetrics && deps.store.kind === 'postgres'
      ? sampleWorkerSessions(deps.sql, options.consumer, { pollMs: Math.min(pollMs, 250) })
      : undefined;
  const controlPlane = Promise.all([checkAlarmTopic(deps.alarmTopic), checkBreakerClosed(deps.breaker)]);
  let canaries: CanaryOutcomes;
  let sessions: WorkerSessions | undefined;
  try {
    canaries = await runCanaries(run, options, queue.maxReceiveCount);
  } finally {
    sessions = await sampler?.stop().catch(() => undefined);
  }
  const [alarmTopic, breaker] = await controlPlane;
  const pinning = await checkProxyPinning(pinningTarget(deps, run, started, sessions));
  const privileges = await privilegesCheck(deps, options, sessions);
  const cleanup = await cleanupCheck(deps, canaries);
  const checks = [
    canaries.applied.check,
    canaries.duplicate.check,
    canaries.poison.check,
    canaries.dlq.check,
    alarmTopic,
    breaker,
    pinning,
    privileges,
    cleanup,
  ];
  const result: SmokeResult = {
    runId,
    stage: options.stage,
    store: deps.store.kind,
    queueUrl: options.queueUrl,
    passed: checks.every((check) => check.result !== 'FAIL'),
    durationMs: deps.clock.now().getTime() - started.getTime(),
    checks,
  };
  emit(deps.out, result, () => render(result));
  const failed = checks.filter((check) => check.result === 'FAIL');
  if (failed.length > 0) {
    throw new FailedChecksError(
      `${failed.length} check(s) failed: ${failed.map((check) => check.check).join(', ')}`,
      { runId, failed: failed.map((check) => check.check) },
    );
  }
  return result;
}

/** The canaries' checks and whether each one's state may be removed. */
interface CanaryOutcomes {
  readonly applied: Settled;
  readonly duplicate: Settled;
  readonly poison: Settled;
  readonly dlq: Settled;
  readonly sent: {
    readonly apply: string;
    readonly poison?: { key: string; body: string };
    readonly retry?: string;
  };
}

/**
 * The applied canary and its duplicate first (DynamoDB judges the duplicate by the queue emptying), then the poison
 * and the never-recovering canaries at once.
 */
async function runCanaries(
  run: CanaryRun,
  options: SmokeOptions,
  maxReceiveCount: number | undefined,
): Promise<CanaryOutcomes> {
  const now = run.clock.now();
  const apply = canary(run.runId, 'apply', now);
  const applied = await checkApplied(run, apply);
  const duplicate =
    applied.check.result === 'PASS' && applied.state
      ? await checkDuplicate(run, apply, applied.state)
      : { check: skip(SMOKE_CHECKS.duplicate, 'not sent: the canary was not applied'), settled: true };
  const poisonSent = options.terminalPolicy !== 'dlq';
  const poison = canary(run.runId, 'poison', now);
  const retry = canary(run.runId, 'retry', now);
  const [poisonChecked, dlqChecked] = await Promise.all([
    poisonSent
      ? checkPoison(run, poison)
      : {
          check: skip(
            SMOKE_CHECKS.poison,
            `not sent: the stage's terminalPolicy is 'dlq' (terminal messages go to the DLQ, unquarantined)`,
          ),
          settled: true,
        },
    options.skipDlq
      ? { check: skip(SMOKE_CHECKS.dlq, 'not sent (--skip-dlq)'), settled: true }
      : checkDlq(run, retry, { url: options.dlqUrl, maxReceiveCount }),
  ]);
  return {
    applied,
    duplicate,
    poison: poisonChecked,
    dlq: dlqChecked,
    sent: {
      apply: apply.key,
      ...(poisonSent ? { poison: { key: poison.key, body: poison.body } } : {}),
      ...(options.skipDlq ? {} : { retry: retry.key }),
    },
  };
}

function pinningTarget(
  deps: SmokeDeps,
  run: CanaryRun,
  since: Date,
  sessions: WorkerSessions | undefined,
): PinningTarget {
  if (deps.store.kind === 'dynamodb') return { kind: 'skip', reason: 'DynamoDB store: no database proxy' };
  if (deps.proxyMetrics) {
    return {
      kind: 'aws',
      ...deps.proxyMetrics,
      since,
      deadlineMs: run.deadlineMs,
      clock: deps.clock,
      pollMs: Math.max(run.pollMs, 5000),
    };
  }
  if (!sessions) return { kind: 'skip', reason: 'local: the worker sessions could not be sampled' };
  return { kind: 'local', sessions };
}

async function privilegesCheck(
  deps: SmokeDeps,
  options: SmokeOptions,
  sessions: WorkerSessions | undefined,
): Promise<SmokeCheck> {
  if (deps.store.kind === 'dynamodb' || !deps.sql) {
    return skip(
      SMOKE_CHECKS.privileges,
      'DynamoDB store: its IAM grant is checked at synth (docs/dynamodb.md)',
    );
  }
  try {
    return await checkWorkerPrivileges({
      sql: deps.sql,
      role: options.workerDbUser,
      seenUsers: sessions?.users ?? [],
      local: options.local,
    });
  } catch (error) {
    return fail(
      SMOKE_CHECKS.privileges,
      `could not read the privileges of ${options.workerDbUser}: ${(error as Error).message}`,
    );
  }
}

/** Removes the state of the canaries whose messages are out of the source queue; says what stays and why. */
async function cleanupCheck(deps: SmokeDeps, canaries: CanaryOutcomes): Promise<SmokeCheck> {
  const keys: string[] = [];
  const left: string[] = [];
  const settled = canaries.applied.settled && canaries.duplicate.settled;
  const add = (key: string | undefined, done: boolean) => {
    if (!key) return;
    if (done) keys.push(key);
    else
      left.push(
        `${key}: its message may still be in the source queue (the worker settles it; its inbox state stays)`,
      );
  };
  add(canaries.sent.apply, settled);
  add(canaries.sent.poison?.key, canaries.poison.settled);
  add(canaries.sent.retry, canaries.dlq.settled);
  const poison = canaries.sent.poison && canaries.poison.settled ? canaries.sent.poison : undefined;
  const removed = await deps.store.remove({ keys, ...(poison ? { poison } : {}) });
  const parts = [
    removed.removed.length ? `removed ${removed.removed.join(', ')}` : '',
    ...removed.left,
    ...left,
    ...removed.errors,
  ].filter(Boolean);
  const detail = parts.join('; ') || 'nothing to remove';
  return removed.errors.length > 0 ? fail(SMOKE_CHECKS.cleanup, detail) : pass(SMOKE_CHECKS.cleanup, detail);
}

function render(result: SmokeResult): string {
  const count = (verdict: string) => result.checks.filter((check) => check.result === verdict).length;
  return [
    `Smoke run ${result.runId} on stage ${result.stage} (${result.store}): ${count('PASS')} PASS, ${count('FAIL')} FAIL, ${count('SKIP')} SKIP in ${(result.durationMs / 1000).toFixed(1)} s`,
    table(
      ['CHECK', 'RESULT', 'DETAIL'],
      result.checks.map((check) => [check.check, check.result, wrap(check.detail)]),
    ),
  ].join('\n');
}

/** Wraps a detail at word boundaries, so the table fits a terminal. */
function wrap(text: string, width = 72): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines.join('\n');
}
