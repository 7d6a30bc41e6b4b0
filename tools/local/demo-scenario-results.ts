import postgres from 'postgres';
import type { DrivenScenario } from './demo-scenario-drive.ts';
import type { PostgresRun } from './demo-scenario-run.ts';
import { peekQueue } from './demo-scenario-sqs.ts';
import type { OutboxRelayLoopResult } from './outbox-relay-loop.ts';
import { runScheduledJobs } from './run-scheduled-jobs.ts';
import type { ScenarioConsumer } from './scenario-consumer.ts';

/**
 * What a PostgreSQL demo run left, read once it ended: the scheduled jobs' run, the components' roles, the DLQ, the
 * rows of the run in every table and the relay loop's totals.
 *
 * @internal
 */
export interface PostgresResults {
  readonly jobs: { readonly detail: string; readonly problems: readonly string[] };
  /** The database role each component signed in as. */
  readonly consumerRoles: string;
  readonly dlqBodies: readonly string[];
  readonly inboxRows: readonly { idempotency_key: string; status: string; receive_count: number }[];
  readonly quarantineRows: readonly {
    idempotency_key: string | null;
    reason_code: string;
    body_hash: string;
  }[];
  readonly ledger: { entries: number; payments: number } | undefined;
  readonly caseRows: readonly { case_id: string; version: number; stage: string }[];
  readonly deadlines: { count: number } | undefined;
  readonly documentRows: { count: number } | undefined;
  readonly offloaded: { count: number } | undefined;
  readonly relayTotals: OutboxRelayLoopResult;
  readonly outbox: { enqueued: number; published: number; with_id: number } | undefined;
}

/**
 * Runs the scheduled jobs, reads what the run left and closes the run's connections.
 *
 * @internal
 */
export async function readPostgresResults(
  run: PostgresRun,
  esm: ScenarioConsumer,
  driven: DrivenScenario,
): Promise<PostgresResults> {
  const { options, side, relaySql } = run;
  const jobs = await runScheduledJobs(run.urlOf, run.consumer);
  const consumerRoles = await componentRoles(run);
  const dlqBodies = await peekQueue(options.sqs, options.queues.dlqUrl);
  options.onProgress?.(Math.min(run.total, esm.deleted() + dlqBodies.length), run.total);
  const rows = await readRunRows(run, driven.outboxKeys);
  const relayTotals = await driven.relay;
  const [outbox] = await side<{ enqueued: number; published: number; with_id: number }[]>`
    select count(*)::int as enqueued, count(*) filter (where status = 'PUBLISHED')::int as published,
           count(sqs_message_id)::int as with_id
    from outbox_events where idempotency_key in ${side(driven.outboxKeys)}
  `;
  await Promise.all([side.end({ timeout: 5 }), relaySql.end({ timeout: 5 })]);
  return { jobs, consumerRoles, dlqBodies, ...rows, relayTotals, outbox };
}

/** The role the consumer's DATABASE_URL signs in as, and the relay's. */
async function componentRoles(run: PostgresRun): Promise<string> {
  const roleOf = async (client: postgres.Sql) =>
    (await client<{ role: string }[]>`select current_user as role`)[0]?.role ?? '?';
  // The worker (or poller) runs in its own processes: the role its DATABASE_URL signs in as.
  const consumerSql = postgres(run.workerUrl.toString(), { max: 1, connect_timeout: 10, onnotice: () => {} });
  const consumerRole = await roleOf(consumerSql).finally(() => consumerSql.end({ timeout: 5 }));
  return `${run.runtime === 'poller' ? 'poller' : 'worker'} ${consumerRole}, relay ${await roleOf(run.relaySql)}`;
}

/** The run's rows: inbox, quarantine, ledger, cases, deadlines, documents and offloaded outbox events. */
async function readRunRows(run: PostgresRun, outboxKeys: readonly string[]) {
  const { side, consumer } = run;
  const prefix = `${run.runId}%`;
  const inboxRows = await side<{ idempotency_key: string; status: string; receive_count: number }[]>`
    select idempotency_key, status, receive_count from worker_inbox
    where consumer = ${consumer} and idempotency_key like ${prefix}
  `;
  const quarantineRows = await side<
    { idempotency_key: string | null; reason_code: string; body_hash: string }[]
  >`
    select idempotency_key, reason_code, body_hash from worker_quarantine
    where consumer = ${consumer} and (idempotency_key like ${prefix} or first_quarantined_at >= ${new Date(run.started)})
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
  return { inboxRows, quarantineRows, ledger, caseRows, deadlines, documentRows, offloaded };
}
