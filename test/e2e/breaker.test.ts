import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { createDatabaseProbe } from '../../lambda/breaker/create-database-probe.ts';
import { BREAKER_METRICS, createBreaker, runBreaker } from '../../lambda/breaker/run-breaker.ts';
import { exampleHandlers } from '../../lambda/domain/index.ts';
import { createWorker } from '../../lambda/runtimes/lambda/create-worker.ts';
import { startEventSourceMapping } from '../../tools/local/event-source-mapping.ts';
import { localLambdaControl } from '../../tools/local/local-lambda-control.ts';
import { queueCounts } from '../../tools/local/local-queues.ts';
import { createTestDatabase } from '../support/database.ts';
import { paymentBody } from '../support/payment-body.ts';
import { proxiedDatabase } from '../support/proxied-database.ts';
import { waitFor } from '../support/wait-for.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

// The components connect as their database roles (provisioned by the migration function's code); the test's own
// setup and assertions as the database's owner.
const db = await createTestDatabase({ roles: true });
const fixture = await localQueueFixture();

const payment = (id: string) => paymentBody(id, 'acct-breaker');

/** Log lines and metrics the breaker wrote, captured. */
function telemetry() {
  const lines: { level: string; message: string; extra?: Record<string, unknown> }[] = [];
  const counted: string[] = [];
  const line = (level: string) => (message: unknown, extra?: unknown) => {
    lines.push({ level, message: String(message), extra: extra as Record<string, unknown> });
  };
  return {
    lines,
    counted,
    logger: { info: line('info'), warn: line('warn'), error: line('error') } as never,
    metrics: {
      addMetric: (name: string) => {
        counted.push(name);
      },
      publishStoredMetrics: () => {},
    },
  };
}

describe('Circuit breaker over the local event source mapping (database cut by a TCP proxy)', () => {
  it('disables the mapping while the database is down, so no receive count grows and nothing reaches the DLQ; re-enables it half-open, restores it, and the backlog drains with one effect per key', async () => {
    // Prepare: worker and breaker reach the database through one proxy, as both go through RDS Proxy when deployed.
    const { proxy, connect } = await proxiedDatabase(db.roleUrl('worker'));
    const { queueUrl, dlqUrl } = await fixture.queues({ maxReceiveCount: 5, visibilityTimeoutSeconds: 2 });
    const worker = createWorker({
      consumer: 'case-worker',
      handlers: exampleHandlers,
      sql: connect(2),
      sqs: fixture.as('worker').sqs,
      logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
      metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
      recordConcurrency: 1,
      // Every failed record comes back after exactly 2 s (the top of the jitter range): five receives take ~8 s.
      backoff: { baseSeconds: 2, maxSeconds: 2 },
      random: () => 0.999999,
    });
    /** The receive counts each SQS message was delivered with, by message id. */
    const receives = new Map<string, number[]>();
    const handler = (event: SQSEvent, context: Context) => {
      for (const record of event.Records) {
        const seen = receives.get(record.messageId) ?? [];
        seen.push(Number(record.attributes.ApproximateReceiveCount));
        receives.set(record.messageId, seen);
      }
      return worker(event, context);
    };
    const esm = await startEventSourceMapping({
      sqs: fixture.as('worker').sqs,
      queueUrl,
      handler,
      batchSize: 5,
      maxConcurrency: 4,
      waitTimeSeconds: 1,
      functionTimeoutMs: 10_000,
    });
    const lambda = localLambdaControl(esm);
    const settings = {
      failureThreshold: 2,
      minOpenMs: 1000,
      probeBackoffBaseMs: 500,
      probeBackoffMaxMs: 1000,
      halfOpenMs: 1000,
    };
    const intervalMs = 100;
    const probeTimeoutMs = 1000;
    // Opening takes failureThreshold ticks whose probes fail (each bounded by the probe timeout).
    const openWindowMs = settings.failureThreshold * (intervalMs + probeTimeoutMs) + intervalMs;
    const seen = telemetry();
    const probe = createDatabaseProbe(() => connect(1), probeTimeoutMs);
    const breaker = createBreaker({
      client: lambda.client,
      mappingUuid: lambda.uuid,
      probe,
      probeTimeoutMs,
      scaling: { mode: 'maximum-concurrency', maxConcurrency: 4 },
      halfOpenConcurrency: 2,
      settings,
      logger: seen.logger,
      metrics: seen.metrics,
    });
    const stopBreaker = new AbortController();
    const running = runBreaker(breaker, {
      until: Date.now() + 120_000,
      intervalMs,
      signal: stopBreaker.signal,
    });

    try {
      // Act 1: a healthy start.
      await fixture.send(
        queueUrl,
        Array.from({ length: 5 }, (_, i) => payment(`before-${i}`)),
      );
      await esm.drain({ timeoutMs: 15_000 });
      const callsWhileHealthy = lambda.calls.filter((c) => c.command === 'UpdateEventSourceMappingCommand');

      // Act 2: cut the database, then send a backlog (with 5 keys sent twice).
      const deliveredBefore = new Set(receives.keys());
      proxy.down();
      const cutAt = Date.now();
      const backlog = Array.from({ length: 20 }, (_, i) => payment(`during-${i}`));
      await fixture.send(queueUrl, [...backlog, ...backlog.slice(0, 5)]);
      const disabledAt = await waitFor('the mapping to be disabled', () => !esm.enabled, 10_000, 20);

      // Assess 2: disabled within the window, and from then on nothing is received: the mapping receives no
      // more, the queue attributes stay where they were (fauxqs moves an expired message back to visible when a
      // receive looks at it, so any receive would change them), and the DLQ stays empty — for longer than five
      // redeliveries would take (a 2 s backoff each), after which they would have reached the DLQ.
      expect(disabledAt - cutAt).toBeLessThanOrEqual(openWindowMs);
      await esm.idle();
      const receivedAtOpen = esm.stats.messagesReceived;
      const countsAtOpen = await queueCounts(fixture.sqs, queueUrl);
      const maxReceiveBefore = new Map(
        [...receives]
          .filter(([id]) => !deliveredBefore.has(id))
          .map(([id, counts]) => [id, Math.max(...counts)]),
      );
      const samples = [];
      for (let i = 0; i < 10; i += 1) {
        await sleep(1000);
        samples.push({
          source: await queueCounts(fixture.sqs, queueUrl),
          dlq: await queueCounts(fixture.sqs, dlqUrl),
          received: esm.stats.messagesReceived,
        });
      }
      expect(countsAtOpen.visible + countsAtOpen.inFlight).toBe(25);
      for (const sample of samples) {
        expect(sample).toEqual({
          source: countsAtOpen,
          dlq: { visible: 0, inFlight: 0, delayed: 0 },
          received: receivedAtOpen,
        });
      }
      expect(breaker.state?.status).toBe('open');

      // Act 3: the database returns.
      proxy.up();
      const upAt = Date.now();
      await waitFor('the mapping to be restored', () => breaker.state?.status === 'closed', 15_000, 20);
      await esm.drain({ timeoutMs: 20_000 });

      // Assess 3: half-open at the low concurrency first, then the configured one.
      const updates = lambda.calls
        .filter((c) => c.command === 'UpdateEventSourceMappingCommand')
        .map((c) => ({ ...c.input, UUID: undefined }));
      expect(callsWhileHealthy).toEqual([]);
      expect(updates).toEqual([
        { UUID: undefined, Enabled: false },
        { UUID: undefined, Enabled: true, ScalingConfig: { MaximumConcurrency: 2 } },
        { UUID: undefined, Enabled: true, ScalingConfig: { MaximumConcurrency: 4 } },
      ]);
      expect(esm.enabled).toBe(true);
      expect(esm.maxConcurrency).toBe(4);
      expect(Date.now() - upAt).toBeLessThan(30_000);
      // The open breaker held the counts: nothing was received while it was open (the samples above), so every
      // backlog message received before it opened was received again only after the outage, and no message came
      // near maxReceiveCount. How many receives a message took after the restore is the schedule's: a key's two
      // copies may run at once, and the second comes back once more (IN_PROGRESS_ELSEWHERE). How many backlog
      // messages were received before the open is the schedule's too (on a loaded machine, none may be).
      for (const [messageId, before] of maxReceiveBefore) {
        const after = receives.get(messageId) ?? [];
        expect(Math.max(...after), messageId).toBeGreaterThan(before);
      }
      expect(Math.max(...[...receives.values()].flat())).toBeLessThan(5);
      // One effect per key, nothing in the DLQ.
      const ledger = await db.sql<{ source_event_id: string; n: number }[]>`
        select source_event_id, count(*)::int as n from ledger_entries
        where account_id = 'acct-breaker' group by source_event_id`;
      expect(ledger).toHaveLength(25);
      expect(ledger.every((row) => row.n === 1)).toBe(true);
      expect(await queueCounts(fixture.sqs, dlqUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
      expect(await queueCounts(fixture.sqs, queueUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
      // Every state change logged and counted.
      expect(seen.counted).toEqual([
        BREAKER_METRICS.open,
        BREAKER_METRICS['half-open'],
        BREAKER_METRICS.closed,
      ]);
      expect(
        seen.lines.filter((l) => l.message.startsWith('breaker_') && l.extra?.to).map((l) => l.message),
      ).toEqual(['breaker_open', 'breaker_half_open', 'breaker_closed']);
    } finally {
      stopBreaker.abort();
      await running;
      await esm.stop();
      await proxy.close();
    }
  });
});
