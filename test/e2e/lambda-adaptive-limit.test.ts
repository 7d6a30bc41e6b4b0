import { Logger } from '@aws-lambda-powertools/logger';
import type { Context, SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { createDatabaseProbe } from '../../lambda/breaker/create-database-probe.ts';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import { startEventSourceMapping } from '../../tools/local/event-source-mapping.ts';
import { exampleEnvelope } from '../../tools/local/example-envelope.ts';
import { FedMetrics } from '../../tools/local/fed-metrics.ts';
import { holdCaseLock } from '../../tools/local/hold-case-lock.ts';
import { LOCAL_LOOP_MINUTE_MS, startLocalConcurrencyLoop } from '../../tools/local/local-concurrency-loop.ts';
import { queueCounts } from '../../tools/local/local-queues.ts';
import { createTestDatabase } from '../support/database.ts';
import { paymentBody } from '../support/payment-body.ts';
import { waitFor } from '../support/wait-for.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

// The Lambda half of the adaptive limit end to end: real invocations of the worker through the local event source
// mapping, their EMF metrics read by the breaker's control loop (GetMetricData over the metrics they emitted), which
// moves the mapping's MaximumConcurrency through the Lambda control plane. A case row the test holds locked makes the
// records that write it fail LOCK_TIMEOUT (the worker's lock_timeout lowered to 200 ms for its client).
const db = await createTestDatabase({ roles: true });
const fixture = await localQueueFixture();

const CEILING = 8;
const FLOOR = 2;
const NAMESPACE = 'SqsInboxWorkerTest';

const stageChange = (caseId: string, version: number) =>
  JSON.stringify(
    exampleEnvelope({
      messageType: 'CaseStageChanged',
      idempotencyKey: `lambda-hot:${caseId}:${version}`,
      aggregateType: 'Case',
      aggregateId: caseId,
      payload: { caseId, stage: `STAGE-${version}`, version },
    }),
  );

/** Log lines the loop wrote, captured. */
function captured() {
  const lines: { level: string; message: string; extra: Record<string, unknown>; at: number }[] = [];
  const published: { name: string; value: number }[] = [];
  const line = (level: string) => (message: unknown, extra?: unknown) => {
    lines.push({
      level,
      message: String(message),
      extra: (extra ?? {}) as Record<string, unknown>,
      at: Date.now(),
    });
  };
  return {
    lines,
    published,
    logger: { info: line('info'), warn: line('warn'), error: line('error') } as never,
    metrics: {
      addMetric: (name: string, _unit: 'Count', value: number) => {
        published.push({ name, value });
      },
      publishStoredMetrics: () => {},
    },
  };
}

describe('Lambda adaptive concurrency: the breaker’s control loop over the local event source mapping', () => {
  it('cuts MaximumConcurrency to the floor from the invocations’ own contention metrics while a hot row is locked, restores it after the release, and every message is applied once', async () => {
    // Prepare
    const caseId = `LAMBDA-HOT-${Date.now()}`;
    await db.sql`insert into cases (case_id, stage, version) values (${caseId}, 'NEW', 1)`;
    const { queueUrl, dlqUrl } = await fixture.queues({ maxReceiveCount: 100, visibilityTimeoutSeconds: 30 });
    const metrics = new FedMetrics({ namespace: NAMESPACE, serviceName: 'case-worker' });
    const worker = createWorker({
      consumer: 'lambda-adaptive',
      handlers: exampleHandlers,
      sql: db.as('worker', { max: 2, prepare: false, connection: { lock_timeout: 200 } }),
      sqs: fixture.as('worker').sqs,
      logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
      metrics,
      recordConcurrency: 2,
      backoff: { baseSeconds: 1, maxSeconds: 2 },
      maxBusinessAttempts: 100,
    });
    /**
     * At each invocation's start: the invocations in flight (itself included) and the highest limit in effect since
     * the receive that brought its records began. A poller takes its slot before it receives (as Lambda's do), so a
     * limit cut during that receive does not stop the batch it brings.
     */
    const starts: { inFlight: number; limit: number }[] = [];
    const seen = captured();
    let inFlight = 0;
    const sqs = fixture.as('worker').sqs;
    const receivedAt = new Map<string, number>();
    sqs.middlewareStack.add(
      (next, context) => async (args) => {
        const started = Date.now();
        const result = await next(args);
        if (context.commandName === 'ReceiveMessageCommand') {
          const { Messages } = result.output as { Messages?: { MessageId?: string }[] };
          for (const m of Messages ?? []) receivedAt.set(String(m.MessageId), started);
        }
        return result;
      },
      { step: 'initialize', name: 'receiveTimes' },
    );
    const limitSince = (since: number) =>
      Math.max(
        esm.maxConcurrency,
        ...seen.lines
          .filter((l) => l.at >= since && l.extra.from !== undefined)
          .map((l) => Number(l.extra.from)),
      );
    const esm = await startEventSourceMapping({
      sqs,
      queueUrl,
      handler: async (event: SQSEvent, context: Context) => {
        inFlight += 1;
        const since = Math.min(...event.Records.map((r) => receivedAt.get(r.messageId) ?? Date.now()));
        starts.push({ inFlight, limit: limitSince(since) });
        try {
          return await worker(event, context);
        } finally {
          inFlight -= 1;
        }
      },
      batchSize: 4,
      maxConcurrency: CEILING,
      waitTimeSeconds: 1,
      functionTimeoutMs: 20_000,
    });
    const loop = startLocalConcurrencyLoop({
      esm,
      probe: createDatabaseProbe(() => db.as('worker', { max: 1 }), 1000),
      floor: FLOOR,
      source: { namespace: NAMESPACE, service: 'case-worker' },
      logger: seen.logger,
      metrics: seen.metrics,
    });
    metrics.feed((document) => loop.metricData.ingest(document));
    // A decision reads a window a window after it closed: each cut or raise takes two to three loop minutes.
    const perDecisionMs = 3 * LOCAL_LOOP_MINUTE_MS;
    const release = await holdCaseLock(db.client({ max: 1 }), caseId);
    const hot = Array.from({ length: 40 }, (_, i) => stageChange(caseId, i + 2));
    let feeding: Promise<void> | undefined;
    let stopFeeding = false;
    try {
      // Act 1: the hot records fail LOCK_TIMEOUT, again and again, while the row is held.
      await fixture.send(queueUrl, hot);
      // 8 → 6 → 4 → 3 → 2: four cuts.
      await waitFor('the floor', () => esm.maxConcurrency === FLOOR, 8 * perDecisionMs + 30_000);
      const cutsWhileLocked = seen.lines.filter((l) => l.message === 'concurrency_limit_changed');

      // Act 2: the lock goes; a stream of payments (no hot row) keeps invocations coming while the limit recovers.
      await release();
      const payments: string[] = [];
      feeding = (async () => {
        while (!stopFeeding) {
          const batch = Array.from({ length: 10 }, (_, i) =>
            paymentBody(`lambda-adaptive-${payments.length + i}`, 'acct-la'),
          );
          payments.push(...batch);
          await fixture.send(queueUrl, batch);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      })();
      await waitFor('the ceiling again', () => esm.maxConcurrency === CEILING, 10 * perDecisionMs + 30_000);
      // The changes up to the ceiling (the loop goes on while the queue drains).
      const changesToCeiling = seen.lines.filter((l) => l.message === 'concurrency_limit_changed');
      stopFeeding = true;
      await feeding;
      await esm.drain({ timeoutMs: 60_000 });

      // Assess: four cuts from contention, each logged as a warning with its window's signals; then raises only.
      expect(cutsWhileLocked.map((l) => [l.level, l.extra.from, l.extra.to])).toEqual([
        ['warn', 8, 6],
        ['warn', 6, 4],
        ['warn', 4, 3],
        ['warn', 3, 2],
      ]);
      for (const cut of cutsWhileLocked) {
        expect(cut.extra.reason).toMatch(/signals of load \(contention [1-9]\d*,/);
        expect((cut.extra.signals as { contention: number }).contention).toBeGreaterThan(0);
      }
      const raises = changesToCeiling.slice(cutsWhileLocked.length);
      // After the release the limit comes back to the ceiling; no cut after it cites contention (on a busy host a
      // window's median transaction time may still swing enough to cut once: that is the latency rule, not the lock).
      expect(raises.some((l) => Number(l.extra.to) > Number(l.extra.from))).toBe(true);
      for (const change of raises) {
        const reason = String(change.extra.reason);
        if (Number(change.extra.to) > Number(change.extra.from)) expect(change.level, reason).toBe('info');
        else expect(reason).toMatch(/^median transaction \d+ ms/);
      }
      expect(raises.at(-1)?.extra.to).toBe(CEILING);
      // Through the mapping's control: MaximumConcurrency only, never Enabled (the breaker stayed closed).
      const updates = loop.control.calls.filter((c) => c.command === 'UpdateEventSourceMappingCommand');
      const toCeiling = changesToCeiling.length;
      expect(
        updates
          .slice(0, toCeiling)
          .map((c) => (c.input.ScalingConfig as { MaximumConcurrency: number }).MaximumConcurrency),
      ).toEqual(changesToCeiling.map((l) => l.extra.to));
      expect(updates.every((c) => c.input.Enabled === undefined)).toBe(true);
      expect(loop.breaker.state?.status).toBe('closed');
      // The metric of the limit, each tick that decided.
      const limits = seen.published.filter((p) => p.name === 'ConcurrencyLimit').map((p) => p.value);
      expect(limits).toContain(FLOOR);
      expect(limits).toContain(CEILING);
      expect(limits.indexOf(FLOOR)).toBeLessThan(limits.lastIndexOf(CEILING));
      // The mapping honoured each limit: no invocation started above the limit its slot was taken under.
      for (const start of starts) expect(start.inFlight).toBeLessThanOrEqual(start.limit);
      // Every message applied once, nothing in the DLQ.
      const [hotCase] = await db.sql<
        { version: number }[]
      >`select version from cases where case_id = ${caseId}`;
      expect(hotCase?.version).toBe(41);
      const [inbox] = await db.sql<{ done: number }[]>`
        select count(*)::int as done from worker_inbox
        where consumer = 'lambda-adaptive' and status = 'COMPLETED'`;
      expect(inbox?.done).toBe(hot.length + payments.length);
      const [ledger] = await db.sql<{ n: number; keys: number }[]>`
        select count(*)::int as n, count(distinct source_event_id)::int as keys
        from ledger_entries where account_id = 'acct-la'`;
      expect(ledger).toEqual({ n: payments.length, keys: payments.length });
      expect(await queueCounts(fixture.sqs, dlqUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
    } finally {
      stopFeeding = true;
      await feeding?.catch(() => {});
      await release().catch(() => {});
      await loop.stop();
      await esm.stop();
    }
  });
});
