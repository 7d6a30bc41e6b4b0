import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import postgres from 'postgres';
import { beforeAll, describe, it } from 'vitest';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { paymentCapturedPayload } from '../../lambda/domain/payment-captured.ts';
import { createWorker } from '../../lambda/worker/create-worker.ts';
import { defineHandler } from '../../lambda/worker/message-handler.ts';
import { createTestDatabase } from '../support/database.ts';
import { checkHostileBatches, type PropertyStore } from '../support/hostile-batch-property.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';

// The hostile-batch property (test/support/hostile-batch-property.ts) on PostgreSQL, in both commit modes, through
// the Lambda adapter (createWorker) in one warm execution environment per run. `npm run soak:property` runs it longer.

const db = await createTestDatabase();
let proxy: TcpProxy;
beforeAll(async () => {
  await db.sql`create table effect_counts (payment_id text primary key, applications integer not null)`;
  const target = new URL(db.url);
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
  return () => proxy.close();
});

const TIMEOUT_MS = 3_000;

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

const countedPayment = defineHandler({
  messageType: 'CountedPayment',
  schemaVersion: 1,
  payload: paymentCapturedPayload,
  handle: ({ sql, payload }) => applyPayment(sql, payload),
});

/** A payment whose first delivery waits on a slow call longer than the whole invocation has. */
const slowPayment = defineHandler({
  messageType: 'SlowPayment',
  schemaVersion: 1,
  payload: paymentCapturedPayload,
  async handle({ sql, payload, record }) {
    if (record.attributes.ApproximateReceiveCount === '1') await sleep(TIMEOUT_MS + 1_000);
    return applyPayment(sql, payload);
  },
});

const viaProxy = () => {
  const url = new URL(db.url);
  url.port = String(proxy.port);
  return url.toString();
};

const postgresStore = (commitMode: 'per-message' | 'per-batch'): PropertyStore => ({
  types: { payment: 'CountedPayment', slowPayment: 'SlowPayment' },
  async environment(onOutcome) {
    const pool = commitMode === 'per-batch' ? 1 : 2;
    // The worker reaches the database through the proxy, as it reaches RDS Proxy; the test's own reads do not.
    const workerSql = postgres(viaProxy(), {
      max: pool,
      prepare: false,
      connect_timeout: 1,
      onnotice: () => {},
    });
    const handler = createWorker({
      consumer: 'case-worker',
      handlers: [...exampleHandlers, countedPayment, slowPayment],
      sql: workerSql,
      commitMode,
      recordConcurrency: pool,
      logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
      metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
      onOutcome,
    });
    return { handler, close: () => workerSql.end({ timeout: 0 }).catch(() => {}) };
  },
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
});

describe.each(['per-message', 'per-batch'] as const)(
  'Property: hostile batches on PostgreSQL, %s',
  (commitMode) => {
    it('never throws nor hangs, applies every good message once, quarantines every bad one', async () => {
      await checkHostileBatches(postgresStore(commitMode), { timeoutMs: TIMEOUT_MS });
    }, 600_000);
  },
);
