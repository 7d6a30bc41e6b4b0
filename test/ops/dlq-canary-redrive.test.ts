import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { afterAll, describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { TerminalError } from '../../lambda/errors.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import { defineHandler } from '../../lambda/stores/postgres/message-handler.ts';
import type { Envelope } from '../../lambda/worker/envelope.ts';
import { startEventSourceMapping } from '../../tools/local/event-source-mapping.ts';
import { systemClock } from '../../tools/ops/clock.ts';
import { dlqCanaryRedrive } from '../../tools/ops/dlq-canary-redrive.ts';
import { FailedChecksError } from '../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { postgresOpsStore } from '../../tools/ops/stores/postgres/index.ts';
import { createTestDatabase } from '../support/database.ts';
import { createQueues, depth, paymentEnvelope, seedInbox, sendAll, startOpsSqs } from './ops-fixture.ts';

// The canary redrive on PostgreSQL: fauxqs, the local event source mapping running the real worker (a payment handler
// that refuses closed accounts until "fixed"), and the ops store reading the same database.
process.env.POWERTOOLS_METRICS_DISABLED = 'true';
const db = await createTestDatabase();
const { sqs } = await startOpsSqs();
const store = postgresOpsStore({ sql: () => db.sql });
const workerSql = db.client({ max: 2 });
afterAll(() => workerSql.end({ timeout: 1 }));

/** Whether the handler still rejects closed accounts (the fix not deployed yet). */
let rejecting = true;
const payments = defineHandler({
  messageType: 'PaymentCaptured',
  schemaVersion: 1,
  payload: z.object({
    paymentId: z.string(),
    accountId: z.string(),
    amount: z.string(),
    currency: z.string(),
  }),
  async handle({ sql, payload }) {
    if (rejecting) throw new TerminalError('ACCOUNT_CLOSED', 'the account is closed');
    await sql`
      insert into ledger_entries (entry_id, account_id, amount, currency, source_event_id)
      values (${`ledger-${payload.paymentId}`}, ${payload.accountId}, ${payload.amount}, ${payload.currency}, ${payload.paymentId})
      on conflict (source_event_id) do nothing
    `;
    return undefined;
  },
});
const worker = createWorker({
  consumer: 'case-worker',
  handlers: [payments],
  sql: workerSql,
  sqs,
  backoff: { baseSeconds: 1, maxSeconds: 1 },
  logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
  metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
});

/** `count` payments that failed ACCOUNT_CLOSED and reached the DLQ, their inbox rows as the worker left them. */
async function failedPayments(count: number, base: number) {
  const queues = await createQueues(sqs);
  const envelopes: Envelope[] = Array.from({ length: count }, (_, i) => paymentEnvelope(base + i));
  for (const envelope of envelopes) {
    await seedInbox(db.sql, envelope, {
      status: 'FAILED_TERMINAL',
      failureCode: 'ACCOUNT_CLOSED',
      attempts: 4,
    });
  }
  await sendAll(sqs, queues.dlqUrl, envelopes);
  const esm = await startEventSourceMapping({
    sqs,
    queueUrl: queues.queueUrl,
    handler: worker,
    batchSize: 10,
    waitTimeSeconds: 1,
    functionTimeoutMs: 10_000,
  });
  const keys = envelopes.map((e) => e.idempotencyKey);
  const inbox = () => db.sql<{ key: string; status: string; code: string | null; attempts: number }[]>`
    select idempotency_key as key, status, failure_code as code, receive_count as attempts from worker_inbox
    where consumer = 'case-worker' and idempotency_key in ${db.sql(keys)} order by idempotency_key
  `;
  return { ...queues, envelopes, keys, esm, inbox };
}

const options = (queues: { dlqUrl: string; queueUrl: string }) => ({
  dlqUrl: queues.dlqUrl,
  queueUrl: queues.queueUrl,
  consumer: 'case-worker',
  ratePerSecond: 100,
  waitSeconds: 0,
  roundTimeoutMs: 20_000,
  pollMs: 100,
});

describe('Function: dlqCanaryRedrive() on PostgreSQL', () => {
  it('drains the DLQ in growing rounds while every canary succeeds', async () => {
    // Prepare: the fix is deployed
    rejecting = false;
    const fixture = await failedPayments(7, 500);
    const out = createMemoryOutput();

    // Act
    const result = await dlqCanaryRedrive(
      { store, sqs, out, clock: systemClock },
      { ...options(fixture), canary: 2, watch: true, growth: 2 },
    ).finally(() => fixture.esm.drain({ timeoutMs: 20_000 }).then(() => fixture.esm.stop()));

    // Assess: rounds of 2, 4 and the last 1, then an empty DLQ
    expect(result.rounds.map((r) => r.moves.length)).toEqual([2, 4, 1]);
    expect(result).toMatchObject({
      moved: 7,
      succeeded: 7,
      failed: 0,
      stoppedBy: 'drained',
      leftUnfollowable: 0,
    });
    expect(result.rounds.flatMap((r) => r.outcomes.map((o) => o.outcome))).toEqual(
      Array(7).fill('succeeded'),
    );
    expect(await depth(sqs, fixture.dlqUrl)).toEqual({ visible: 0, inFlight: 0 });
    expect(await depth(sqs, fixture.queueUrl)).toEqual({ visible: 0, inFlight: 0 });
    expect((await fixture.inbox()).map((row) => row.status)).toEqual(Array(7).fill('COMPLETED'));
    const [ledger] = await db.sql`
      select count(*)::int as n from ledger_entries
      where source_event_id in ${db.sql(fixture.envelopes.map((e) => (e.payload as { paymentId: string }).paymentId))}
    `;
    expect(ledger?.n).toBe(7);
    const audit = await db.sql`
      select outcome from ops_audit where action = 'dlq_redrive' and source_queue = ${fixture.dlqUrl}
    `;
    expect(audit.map((row) => row.outcome)).toEqual(Array(7).fill('DONE'));
    expect(out.stdout()).toMatch(/Round 1: 2 message\(s\) redriven, 2 key\(s\) succeeded, 0 did not\./);
    expect(out.stdout()).toContain(
      'Canary redrive stopped (no message left in the DLQ that this run can follow)',
    );
    expect(out.stdout()).not.toContain('ACC-1'); // a payload value
  });

  it('stops after the first round when its canaries fail again, leaving the rest in the DLQ (exit 1)', async () => {
    // Prepare: the handler still rejects the messages
    rejecting = true;
    const fixture = await failedPayments(5, 600);
    const out = createMemoryOutput();

    // Act
    const error = await dlqCanaryRedrive(
      { store, sqs, out, clock: systemClock },
      { ...options(fixture), canary: 2, watch: true },
    )
      .then(
        () => undefined,
        (caught: unknown) => caught,
      )
      .finally(() => fixture.esm.drain({ timeoutMs: 20_000 }).then(() => fixture.esm.stop()));

    // Assess
    expect(error).toBeInstanceOf(FailedChecksError);
    expect((error as FailedChecksError).exitCode).toBe(1);
    expect(out.stdout()).toMatch(/Round 1: 2 message\(s\) redriven, 0 key\(s\) succeeded, 2 did not\./);
    expect(out.stdout()).toContain('more than --max-failures 0 key(s) did not succeed');
    expect(out.stdout()).not.toContain('Round 2');
    expect(await depth(sqs, fixture.dlqUrl)).toEqual({ visible: 3, inFlight: 0 });
    expect(await depth(sqs, fixture.queueUrl)).toEqual({ visible: 0, inFlight: 0 });
    const rows = await fixture.inbox();
    const sent = rows.filter((row) => row.attempts !== 4);
    // The two canaries failed again (one new attempt after the re-arm) and were quarantined; the three others are
    // untouched.
    expect(sent.map((row) => [row.status, row.code, row.attempts])).toEqual([
      ['FAILED_TERMINAL', 'ACCOUNT_CLOSED', 1],
      ['FAILED_TERMINAL', 'ACCOUNT_CLOSED', 1],
    ]);
    expect(rows.filter((row) => row.attempts === 4).map((row) => row.status)).toEqual(
      Array(3).fill('FAILED_TERMINAL'),
    );
    const [quarantined] = await db.sql`
      select count(*)::int as n from worker_quarantine
      where idempotency_key in ${db.sql(sent.map((row) => row.key))} and released_at is null
    `;
    expect(quarantined?.n).toBe(2);
  });
});
