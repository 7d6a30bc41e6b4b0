import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import postgres from 'postgres';
import { createDatabaseProbe } from '../../lambda/breaker/create-database-probe.ts';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { paymentCapturedPayload } from '../../lambda/domain/payment-captured.ts';
import { connectOptions } from '../../lambda/postgres/connect-options.ts';
import { createBatchEngine } from '../../lambda/runtimes/create-batch-engine.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import type { WorkerOptions } from '../../lambda/runtimes/worker-options.ts';
import { defineHandler } from '../../lambda/stores/postgres/message-handler.ts';
import type { TestDatabase } from './database.ts';
import type { PollerEngineSource } from './deliver-through-poller.ts';
import type { PropertyStore } from './hostile-batch-property.ts';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.ts';

/** Applies a payment: one ledger row (create-only), and a count of applications a double effect would raise. */
async function applyPayment(
  sql: postgres.TransactionSql,
  payload: { paymentId: string; accountId: string; amount: string | number; currency: string },
) {
  await sql`
    insert into ledger_entries (entry_id, account_id, amount, currency, source_event_id)
    values (${`ledger-${payload.paymentId}`}, ${payload.accountId}, ${String(payload.amount)}, ${payload.currency}, ${payload.paymentId})
    on conflict (source_event_id) do nothing
  `;
  await sql`
    insert into effect_counts (payment_id, applications) values (${payload.paymentId}, 1)
    on conflict (payment_id) do update set applications = effect_counts.applications + 1
  `;
  return undefined;
}

/** The handlers of a property run: the example domain, a counted payment and a slow one. */
function propertyHandlers(slowMs: number) {
  const countedPayment = defineHandler({
    messageType: 'CountedPayment',
    schemaVersion: 1,
    payload: paymentCapturedPayload,
    handle: ({ sql, payload }) => applyPayment(sql, payload),
  });
  /** A payment whose first delivery waits on a slow call longer than the whole budget. */
  const slowPayment = defineHandler({
    messageType: 'SlowPayment',
    schemaVersion: 1,
    payload: paymentCapturedPayload,
    async handle({ sql, payload, record }) {
      if (record.attributes.ApproximateReceiveCount === '1') await sleep(slowMs);
      return applyPayment(sql, payload);
    },
  });
  return [...exampleHandlers, countedPayment, slowPayment];
}

/** The PostgreSQL store of a property run, for the Lambda runtime and for the poller. */
export type PostgresPropertyStore = PropertyStore & PollerEngineSource & { readonly proxy: TcpProxy };

/**
 * PostgreSQL for the hostile-batch property: the test database with an `effect_counts` table, the worker reaching it
 * through a TCP proxy the run can stall (as it reaches RDS Proxy, with the worker's own client options), the test's
 * reads not. `budgetMs` is what a record gets (the Lambda timeout, the poller's batch budget): the slow payment's first
 * delivery sleeps past it.
 */
export async function postgresPropertyStore(
  db: TestDatabase,
  commitMode: 'per-message' | 'per-batch',
  budgetMs: number,
): Promise<PostgresPropertyStore> {
  await db.sql`create table if not exists effect_counts (payment_id text primary key, applications integer not null)`;
  const target = new URL(db.url);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
  const viaProxy = new URL(db.url);
  viaProxy.port = String(proxy.port);
  const pool = commitMode === 'per-batch' ? 1 : 2;
  const workerSql = () =>
    postgres(viaProxy.toString(), {
      ...connectOptions({ setting: 'DATABASE_URL', connectTimeoutSeconds: 1 }),
      max: pool,
      prepare: false,
      onnotice: () => {},
    });
  const options = (sql: postgres.Sql): WorkerOptions => ({
    consumer: 'case-worker',
    handlers: propertyHandlers(budgetMs + 1_000),
    sql,
    commitMode,
    recordConcurrency: pool,
    backoff: { baseSeconds: 1, maxSeconds: 1 },
    logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
    metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
  });
  // The poller's own probe: a fresh client after a probe that timed out (the stall keeps its socket for ever).
  const probe = createDatabaseProbe(workerSql, 500);
  return {
    proxy,
    types: { payment: 'CountedPayment', slowPayment: 'SlowPayment' },
    async environment(onOutcome) {
      const sql = workerSql();
      const handler = createWorker({ ...options(sql), onOutcome });
      return { handler, close: () => sql.end({ timeout: 0 }).catch(() => {}) };
    },
    engine({ onOutcome, onRecordSettled }) {
      const sql = workerSql();
      const engine = createBatchEngine({ ...options(sql), onOutcome, onRecordSettled });
      return { engine, concurrency: pool, close: () => sql.end({ timeout: 0 }).catch(() => {}) };
    },
    probe: () => probe(),
    async effects(message) {
      const [row] =
        await db.sql`select applications from effect_counts where payment_id = ${message.paymentId ?? ''}`;
      return Number(row?.applications ?? 0);
    },
    async quarantineCodes(hash) {
      const rows = await db.sql`select reason_code from worker_quarantine where body_hash = ${hash}`;
      return rows.map((row) => String(row.reason_code));
    },
    stall: () => proxy.stall(),
    restore: () => proxy.up(),
  };
}
