import type { SQSClient } from '@aws-sdk/client-sqs';
import type postgres from 'postgres';
import type { DemoCheck } from './demo-scenario.ts';
import { sendAll } from './demo-scenario-sqs.ts';
import { exampleEnvelope } from './example-envelope.ts';
import { holdCaseLock } from './hold-case-lock.ts';
import type { LimitChange, LimitWatch } from './limit-watch.ts';
import type { ScenarioConsumer } from './scenario-consumer.ts';
import { waitFor } from './wait-for.ts';

/** What the contention case saw: the limit's path, and what became of its messages. */
export interface ContentionFigures {
  readonly ceiling: number;
  readonly floor: number;
  /** Every change of the limit, in order. */
  readonly changes: readonly LimitChange[];
  /** The lowest limit the case saw. */
  readonly lowest: number;
  /** The limit when the case ended. */
  readonly final: number;
  /** Hot messages (one case, many versions) and their COMPLETED inbox rows. */
  readonly hot: { readonly sent: number; readonly completed: number; readonly version: number };
  /**
   * Stage changes of other cases, sent before the lock and after the release to keep the consumer at its limit, and
   * their COMPLETED rows.
   */
  readonly after: { readonly sent: number; readonly completed: number };
  readonly problems: readonly string[];
  /** Why the case did not run (no room between the floor and the ceiling), when it did not. */
  readonly skipped?: string;
}

/** Options of {@link runContentionCase}. */
export interface ContentionCaseOptions {
  readonly consumer: ScenarioConsumer;
  /** The demo's own side (the database's owner): the hot case, its lock and the reads. */
  readonly side: postgres.Sql;
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  /** `worker_inbox.consumer`. */
  readonly inboxConsumer: string;
  /** Prefix of the case's keys and case ids (outside the run's own prefix: the run's checks never count them). */
  readonly prefix: string;
  /** The breaker's probe of the database as the worker reaches it (the mapping's control loop runs with a breaker). */
  readonly probe: () => Promise<unknown>;
  readonly timeoutMs: number;
}

const CONTENTION_PREFIX = 'contention-';

/** The prefix of the contention case's keys and case ids in run `runId`: outside the run's own (`<runId>…`). */
export function contentionPrefix(runId: string): string {
  return `${CONTENTION_PREFIX}${runId}`;
}

/** True for a key of a contention case. */
export function isContentionKey(key: string | undefined): boolean {
  return key?.startsWith(CONTENTION_PREFIX) === true;
}

/** A stage change of a case of its own (created by it): load without contention. */
const otherCase = (prefix: string, n: number) =>
  JSON.stringify(
    exampleEnvelope({
      messageType: 'CaseStageChanged',
      idempotencyKey: `${prefix}:after:${n}`,
      aggregateType: 'Case',
      aggregateId: `${prefix}-after-${n}`,
      payload: { caseId: `${prefix}-after-${n}`, stage: 'REVIEW', version: 1 },
    }),
  );

const stageChange = (prefix: string, caseId: string, version: number) =>
  JSON.stringify(
    exampleEnvelope({
      messageType: 'CaseStageChanged',
      idempotencyKey: `${prefix}:hot:v${version}`,
      aggregateType: 'Case',
      aggregateId: caseId,
      payload: { caseId, stage: `STAGE-${version}`, version },
    }),
  );

/**
 * The adaptive limit's case, once the rest drained: one case row held locked by another transaction while 30 stage
 * changes of that case arrive (each fails LOCK_TIMEOUT, retryable, until the lock goes), until the limit is cut;
 * then the lock goes, and stage changes of other cases keep coming until the limit is back at its ceiling.
 * On the mapping the breaker's control loop moves `MaximumConcurrency` from the function's metrics; on the poller its
 * own limit moves. Every message must complete once, none reach the DLQ.
 */
export async function runContentionCase(options: ContentionCaseOptions): Promise<ContentionFigures> {
  const { side, prefix, timeoutMs } = options;
  const hotCase = `${prefix}-hot`;
  await side`insert into cases (case_id, stage, version) values (${hotCase}, 'INVESTIGATION', 1) on conflict do nothing`;
  const hot = Array.from({ length: 30 }, (_, i) => stageChange(prefix, hotCase, i + 2));
  const problems: string[] = [];
  const watch: LimitWatch = options.consumer.watchLimit(options.probe);
  if (watch.ceiling <= watch.floor) {
    await watch.stop();
    return {
      ceiling: watch.ceiling,
      floor: watch.floor,
      changes: [],
      lowest: watch.ceiling,
      final: watch.ceiling,
      hot: { sent: 0, completed: 0, version: 1 },
      after: { sent: 0, completed: 0 },
      problems: [],
      skipped: `not run: the limit cannot move at --concurrency ${watch.ceiling} (its floor is ${watch.floor}); run with more to see it`,
    };
  }
  const after: string[] = [];
  /** Stage changes of other cases, 10 every 100 ms, until `done` (the consumer kept at its limit meanwhile). */
  const streamUntil = async (done: () => boolean) => {
    const reached = waitFor(done, timeoutMs);
    let settled = false;
    void reached.then(() => {
      settled = true;
    });
    while (!settled) {
      const batch = Array.from({ length: 10 }, (_, i) => otherCase(prefix, after.length + i));
      after.push(...batch);
      await sendAll(options.sqs, options.queueUrl, batch);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return reached;
  };
  // The poller's limit may still be low from the scenario's own locked cases: back to its ceiling first.
  if (!(await streamUntil(() => watch.current() >= watch.ceiling))) {
    problems.push(
      `the limit did not come back to its ceiling ${watch.ceiling} before the case (at ${watch.current()})`,
    );
  }
  const startChanges = watch.changes.length;
  const release = await holdCaseLock(side, hotCase);
  try {
    await sendAll(options.sqs, options.queueUrl, hot);
    // Released at the first cut: held longer, the hot messages would spend their receives (the stack's DLQ takes a
    // message at its fifth) while the limit walks down to its floor.
    if (!(await waitFor(() => watch.current() < watch.ceiling, timeoutMs))) {
      problems.push(`the limit did not drop below its ceiling ${watch.ceiling} while the case was locked`);
    }
    await release();
    if (!(await streamUntil(() => watch.current() >= watch.ceiling))) {
      problems.push(`the limit did not recover to its ceiling ${watch.ceiling} (at ${watch.current()})`);
    }
    await options.consumer.drain({ timeoutMs }).catch((error: Error) => {
      problems.push(error.message);
    });
  } finally {
    await release().catch(() => {});
    await watch.stop();
  }
  const changes = watch.changes.slice(startChanges);
  const lowest = Math.min(watch.ceiling, ...changes.map((change) => change.to));
  return {
    ...(await countApplied(options, hot.length, after.length)),
    ceiling: watch.ceiling,
    floor: watch.floor,
    changes,
    lowest,
    final: watch.current(),
    problems: [...problems, ...watch.errors],
  };
}

/**
 * The summary's check of the case: the limit was cut and came back to its ceiling, and every message of the case
 * completed once (the hot case at its last version). None when the case could not run (no room to move).
 */
export function contentionChecks(
  figures: ContentionFigures | undefined,
  runtime: 'event-source-mapping' | 'poller',
): DemoCheck[] {
  const name = 'the adaptive limit drops under contention and recovers';
  const what =
    runtime === 'poller'
      ? "the poller's records in flight"
      : "the mapping's MaximumConcurrency (the breaker's loop)";
  if (figures?.skipped) return [];
  if (!figures) return [{ name, ok: false, detail: 'the case did not run' }];
  const { hot, after, changes } = figures;
  const path = [figures.ceiling, ...changes.map((change) => change.to)].join(' → ');
  const problems = figures.problems.length ? `; ${figures.problems.join('; ')}` : '';
  return [
    {
      name,
      ok:
        figures.problems.length === 0 &&
        figures.lowest < figures.ceiling &&
        figures.final === figures.ceiling &&
        hot.completed === hot.sent &&
        hot.version === hot.sent + 1 &&
        after.completed === after.sent,
      detail: `${what}: ${path} (${hot.completed} of ${hot.sent} stage changes of a locked case completed, and ${after.completed} of ${after.sent} of other cases around it)${problems}`,
    },
  ];
}

/** The case's COMPLETED inbox rows, and the hot case's version. */
async function countApplied(options: ContentionCaseOptions, hotSent: number, afterSent: number) {
  const { side, prefix, inboxConsumer } = options;
  const rows = await side<{ kind: string; n: number }[]>`
    select split_part(idempotency_key, ':', 2) as kind, count(*)::int as n from worker_inbox
    where consumer = ${inboxConsumer} and idempotency_key like ${`${prefix}:%`} and status = 'COMPLETED'
    group by 1`;
  const [row] = await side<
    { version: number }[]
  >`select version from cases where case_id = ${`${prefix}-hot`}`;
  const completed = (kind: string) => rows.find((r) => r.kind === kind)?.n ?? 0;
  return {
    hot: { sent: hotSent, completed: completed('hot'), version: row?.version ?? 0 },
    after: { sent: afterSent, completed: completed('after') },
  };
}
