import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { connectOptions } from '../../lambda/postgres/connect-options.ts';
import type { RoleFunction } from '../../lambda/postgres/provision-roles.ts';
import { demoMessageCount } from './demo-messages.ts';
import type { DemoScenarioOptions } from './demo-scenario.ts';
import { buildPostgresScenario, type PostgresScenario } from './demo-scenario-cases.ts';
import { type DemoDocuments, uploadDocuments } from './demo-scenario-payload-refs.ts';
import { holdCaseLock } from './hold-case-lock.ts';
import { OutcomeRecorder } from './outcome-recorder.ts';

/**
 * A PostgreSQL demo run under way, as its phases share it: its settings with their defaults, its scenario, its
 * connections, the outcomes recorded so far and the releases of its locked cases.
 *
 * @internal
 */
export interface PostgresRun {
  readonly options: DemoScenarioOptions;
  readonly started: number;
  readonly runId: string;
  readonly concurrency: number;
  readonly consumer: string;
  readonly timeoutMs: number;
  readonly runtime: 'event-source-mapping' | 'poller';
  readonly urlOf: (fn: RoleFunction) => string;
  readonly clientsOf: NonNullable<DemoScenarioOptions['clients']>;
  /** The payloadRef cases' documents (undefined without S3). */
  readonly documents: DemoDocuments | undefined;
  readonly scenario: PostgresScenario;
  /** Messages of the scenario. */
  readonly total: number;
  /** The worker's database URL, with the demo's lock timeout. */
  readonly workerUrl: URL;
  /** The demo's own connections, as the database's owner. */
  readonly side: postgres.Sql;
  /** The relay loop's connection, as the relay's role. */
  readonly relaySql: postgres.Sql;
  readonly recorder: OutcomeRecorder;
  /** Releases the row lock of the retryable case. */
  readonly releaseLocked: () => Promise<void>;
  /** Releases the row lock of the case that never recovers. */
  readonly releaseStuck: () => Promise<void>;
}

/**
 * Sets a PostgreSQL demo run up: its documents and scenario, its connections, the cases the producers already
 * have (at version 1) and the row locks of its two locked cases.
 *
 * @internal
 */
export async function openPostgresRun(options: DemoScenarioOptions): Promise<PostgresRun> {
  const started = Date.now();
  const runId = `r${randomBytes(3).toString('hex')}`;
  const count = demoMessageCount(options.messages);
  const { sqs } = options;
  const urlOf = options.databaseUrlOf ?? (() => options.databaseUrl);
  const documents = options.s3 ? await uploadDocuments(options.s3, runId, options.bucket) : undefined;
  const clientsOf = options.clients ?? (() => ({ sqs, s3: options.s3 }));
  const scenario = buildPostgresScenario(runId, count, documents);
  const connections = openConnections(options.databaseUrl, urlOf);
  const { side } = connections;

  // State the producers already have: the cases exist at version 1.
  for (const caseId of scenario.caseIds) {
    await side`insert into cases (case_id, stage, version) values (${caseId}, 'INVESTIGATION', 1) on conflict do nothing`;
  }
  return {
    options,
    started,
    runId,
    concurrency: options.concurrency ?? 4,
    consumer: options.consumer ?? 'case-worker',
    timeoutMs: options.timeoutMs ?? 90_000,
    runtime: options.runtime ?? 'event-source-mapping',
    urlOf,
    clientsOf,
    documents,
    scenario,
    total: scenario.messages.length,
    ...connections,
    recorder: new OutcomeRecorder(),
    releaseLocked: await holdCaseLock(side, scenario.lockedCase),
    releaseStuck: await holdCaseLock(side, scenario.stuckCase),
  };
}

/** The worker's URL and the connections of the demo's own side and of the relay. */
function openConnections(databaseUrl: string, urlOf: (fn: RoleFunction) => string) {
  // Deployed, the lock timeout is the worker role's default (5 s, see provisionRoles); the demo lowers it for its
  // worker's connections (a connection parameter in the URL) so its locked case fails in 300 ms, not 5 s.
  const workerUrl = new URL(urlOf('worker'));
  workerUrl.searchParams.set('lock_timeout', '300');
  // The demo's own side runs as the database's owner, not as a component: its setup (the cases the producers
  // already have, the transactions holding a case's row locked), its producers (services outside the stack, with
  // rights of their own, not the stack's) and the summary's reads of every table. Every component has its role.
  const side = postgres(databaseUrl, {
    ...connectOptions({ setting: 'DATABASE_URL', connectTimeoutSeconds: 10 }),
    max: 3,
    onnotice: () => {},
  });
  const relaySql = postgres(urlOf('relay'), {
    ...connectOptions({ setting: 'DATABASE_URL', connectTimeoutSeconds: 10 }),
    max: 1,
    onnotice: () => {},
  });
  return { workerUrl, side, relaySql };
}
