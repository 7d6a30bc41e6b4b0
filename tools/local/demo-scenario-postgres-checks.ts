import { createHash } from 'node:crypto';
import type { OutcomeResult } from '../../lambda/worker/outcome.ts';
import { type BigPayloadCase, bigPayloadChecks } from './big-payload-case.ts';
import { contentionChecks, isContentionKey } from './contention-case.ts';
import { keyOf, type ScenarioCase } from './demo-messages.ts';
import type { DemoCheck } from './demo-scenario.ts';
import {
  accountedCheck,
  countBy,
  duplicatesCheck,
  payloadRefCheck,
  quarantineCheck,
} from './demo-scenario-checks.ts';
import type { DrivenScenario } from './demo-scenario-drive.ts';
import type { PostgresResults } from './demo-scenario-results.ts';
import type { PostgresRun } from './demo-scenario-run.ts';
import type { ScenarioConsumer } from './scenario-consumer.ts';

const sha = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * What a PostgreSQL demo run's checks and summary read from its results: the inbox by key, the DLQ without the
 * payload-memory case, the outcomes, the messages sent by case and the cases' versions.
 *
 * @internal
 */
export interface PostgresFacts {
  readonly inbox: ReadonlyMap<string, PostgresResults['inboxRows'][number]>;
  /** The DLQ's bodies of the scenario (the payload-memory case's left out). */
  readonly scenarioDlq: readonly string[];
  /** Their idempotency keys (or `(undecodable)`). */
  readonly dlqKeys: readonly string[];
  readonly outcomes: Partial<Record<OutcomeResult, number>>;
  readonly byKind: Record<ScenarioCase, number>;
  readonly versions: ReadonlyMap<string, number>;
}

/**
 * Derives the {@link PostgresFacts} of a run.
 *
 * @internal
 */
export function postgresFacts(
  run: PostgresRun,
  results: PostgresResults,
  bigCase: BigPayloadCase | undefined,
): PostgresFacts {
  const { scenario, recorder } = run;
  const scenarioDlq = results.dlqBodies.filter((body) => !bigCase || keyOf(body) !== bigCase.idempotencyKey);
  return {
    inbox: new Map(results.inboxRows.map((row) => [row.idempotency_key, row])),
    scenarioDlq,
    dlqKeys: scenarioDlq.map((body) => keyOf(body) ?? '(undecodable)'),
    // The big payload's deliveries are its own case's (a kill after its commit makes its redelivery a DUPLICATE), and
    // so are the contention case's (its stage changes arrive out of order: stale skips of their own).
    outcomes: recorder.counts((outcome) => ofScenario(outcome.idempotencyKey, bigCase)),
    byKind: countBy(scenario.messages, (m) => m.kind) as Record<ScenarioCase, number>,
    versions: new Map(results.caseRows.map((row) => [row.case_id, row.version])),
  };
}

/** True for a key of the scenario's own messages: not the payload-memory case's nor the contention case's. */
function ofScenario(key: string | undefined, bigCase: BigPayloadCase | undefined): boolean {
  return key !== bigCase?.idempotencyKey && !isContentionKey(key);
}

/**
 * The checks of a PostgreSQL demo run, in the order the summary shows them.
 *
 * @internal
 */
export function postgresChecks(
  run: PostgresRun,
  { esm, bigCase }: { readonly esm: ScenarioConsumer; readonly bigCase: BigPayloadCase | undefined },
  driven: DrivenScenario,
  results: PostgresResults,
  facts: PostgresFacts,
): DemoCheck[] {
  const { scenario, recorder } = run;
  const { inbox, byKind, versions } = facts;
  const { jobs, consumerRoles, ledger } = results;
  const reasonCodes = results.quarantineRows.map((row) => row.reason_code);
  return [
    accountedCheck(unaccountedMessages(run, results, facts), driven.problems, run.total),
    outboxCheck(driven.outboxKeys, results, facts),
    {
      name: 'one ledger entry per payment despite duplicates and crashes',
      ok: ledger?.entries === scenario.paymentIds.length && ledger?.payments === scenario.paymentIds.length,
      detail: `${ledger?.entries} entries for ${scenario.paymentIds.length} payments`,
    },
    duplicatesCheck(
      recorder.outcomes.filter((outcome) => ofScenario(outcome.idempotencyKey, bigCase)),
      { duplicates: byKind.duplicate, crashes: esm.deletesDropped(), messages: scenario.messages },
    ),
    {
      name: 'out-of-order versions never roll back',
      ok:
        scenario.outOfOrder.every((caseId) => versions.get(caseId) === 3) &&
        facts.outcomes.STALE_VERSION_SKIPPED === 3,
      detail: `${facts.outcomes.STALE_VERSION_SKIPPED ?? 0} stale skips; versions ${scenario.outOfOrder.map((id) => versions.get(id)).join(', ')}`,
    },
    {
      name: 'a retryable failure backs off, then succeeds',
      ok: inbox.get(scenario.lockedKey)?.status === 'COMPLETED' && versions.get(scenario.lockedCase) === 2,
      detail: `${recorder.countOf(scenario.lockedKey, 'RETRYABLE_FAILURE')} retryable failures, then ${inbox.get(scenario.lockedKey)?.status}`,
    },
    quarantineCheck(reasonCodes, byKind),
    ...(run.documents
      ? [
          payloadRefCheck({
            documents: results.documentRows?.count ?? 0,
            offloaded: results.offloaded?.count ?? 0,
            reasonCodes,
          }),
        ]
      : []),
    {
      name: 'each component runs as its database role',
      ok: jobs.problems.length === 0,
      detail: `${consumerRoles}; ${jobs.problems.length === 0 ? jobs.detail : jobs.problems.join('; ')}`,
    },
    dlqCheck(run, facts),
    ...bigPayloadChecks(driven.bigPayload),
    ...contentionChecks(driven.contention, run.runtime),
  ];
}

/** The messages with neither their effect, nor their quarantine entry, nor their DLQ copy. */
function unaccountedMessages(run: PostgresRun, results: PostgresResults, facts: PostgresFacts) {
  const quarantinedKeys = new Set(results.quarantineRows.map((row) => row.idempotency_key));
  const quarantinedBodies = new Set(results.quarantineRows.map((row) => row.body_hash));
  return run.scenario.messages.filter((m) =>
    m.key && m.kind !== 'poison'
      ? facts.inbox.get(m.key)?.status !== 'COMPLETED' &&
        !quarantinedKeys.has(m.key) &&
        !facts.dlqKeys.includes(m.key)
      : !quarantinedBodies.has(sha(m.body)),
  );
}

/** Every outbox event written by a producer is published by the relay and applied once. */
function outboxCheck(
  outboxKeys: readonly string[],
  results: PostgresResults,
  facts: PostgresFacts,
): DemoCheck {
  const { outbox, relayTotals } = results;
  const { inbox } = facts;
  return {
    name: 'every outbox event is published by the relay and applied once',
    ok:
      outbox?.enqueued === outboxKeys.length &&
      outbox?.published === outboxKeys.length &&
      outbox?.with_id === outboxKeys.length &&
      outboxKeys.every((key) => inbox.get(key)?.status === 'COMPLETED'),
    detail: `${outbox?.published ?? 0} of ${outboxKeys.length} published in ${relayTotals.runs} relay runs, ${
      outboxKeys.filter((key) => inbox.get(key)?.status === 'COMPLETED').length
    } completed`,
  };
}

/** The stuck case's message, alone in the DLQ, its body as sent. */
function dlqCheck(run: PostgresRun, facts: PostgresFacts): DemoCheck {
  const { scenario } = run;
  const { scenarioDlq } = facts;
  const stuckBody = scenario.messages.find((m) => m.key === scenario.stuckKey)?.body;
  return {
    name: 'a message that never recovers reaches the DLQ with its body intact',
    ok: scenarioDlq.length === 1 && scenarioDlq[0] === stuckBody,
    detail: `${scenarioDlq.length} in the DLQ after ${facts.inbox.get(scenario.stuckKey)?.receive_count ?? 0} attempts`,
  };
}
