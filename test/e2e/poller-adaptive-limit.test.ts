import type { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { ADAPTIVE_WINDOW_MS } from '../../lambda/runtimes/poller/constants.ts';
import type { PollerEvent } from '../../lambda/runtimes/poller/start-poller.ts';
import { exampleEnvelope } from '../../tools/local/example-envelope.ts';
import { holdCaseLock } from '../../tools/local/hold-case-lock.ts';
import { queueCounts, queueIsEmpty } from '../../tools/local/local-queues.ts';
import { createTestDatabase } from '../support/database.ts';
import { paymentBody } from '../support/payment-body.ts';
import { waitFor } from '../support/wait-for.ts';
import { localQueueFixture } from './local-queue-fixture.ts';
import { startTestPoller } from './poller-fixture.ts';

// The poller's adaptive limit of records in flight against a real PostgreSQL: a row the test holds locked makes the
// records that write it fail LOCK_TIMEOUT (the worker's lock_timeout lowered to 200 ms for its client), which must cut
// the limit; business failures must not. The components connect as their database roles; the test's own setup and
// assertions as the database's owner.
const db = await createTestDatabase({ roles: true });
const fixture = await localQueueFixture();
const { sqs } = fixture;

const CEILING = 8;

/** A `CaseStageChanged` of `caseId` to `version`, keyed `<prefix>:<version>`. */
const stageChange = (prefix: string, caseId: string, version: number) =>
  JSON.stringify(
    exampleEnvelope({
      messageType: 'CaseStageChanged',
      idempotencyKey: `${prefix}:${version}`,
      aggregateType: 'Case',
      aggregateId: caseId,
      payload: { caseId, stage: `STAGE-${version}`, version },
    }),
  );

/** Every ReceiveMessage of `client` with its MaxNumberOfMessages, counted at the SDK below the poller. */
function recordReceives(client: SQSClient): { at: number; max: number }[] {
  const calls: { at: number; max: number }[] = [];
  client.middlewareStack.add(
    (next, context) => (args) => {
      if (context.commandName === 'ReceiveMessageCommand') {
        const input = args.input as { MaxNumberOfMessages?: number };
        calls.push({ at: Date.now(), max: input.MaxNumberOfMessages ?? 1 });
      }
      return next(args);
    },
    { step: 'initialize', name: 'recordReceives' },
  );
  return calls;
}

type LimitEvent = Extract<PollerEvent, { type: 'limit' }> & { at: number };
const limitEvents = (events: { at: number; event: PollerEvent }[]): LimitEvent[] =>
  events.flatMap(({ at, event }) => (event.type === 'limit' ? [{ ...event, at }] : []));

describe('Poller adaptive concurrency (fauxqs, real PostgreSQL)', () => {
  it('cuts the limit below POLLER_CONCURRENCY while a hot row is locked (LOCK_TIMEOUT), raises it once the lock is released, and completes every message exactly once', async () => {
    // Prepare: the hot case exists; the worker's client waits at most 200 ms for a row lock.
    const startedAt = Date.now();
    const caseId = `HOT-${Date.now()}`;
    await db.sql`insert into cases (case_id, stage, version) values (${caseId}, 'NEW', 1)`;
    const { queueUrl, dlqUrl } = await fixture.queues({ maxReceiveCount: 100, visibilityTimeoutSeconds: 30 });
    const pollerClients = fixture.as('poller');
    const receives = recordReceives(pollerClients.sqs);
    const { poller, events, lines, outcomes } = await startTestPoller({
      sqs: pollerClients.sqs,
      queueUrl,
      sql: db.as('worker', { max: CEILING, prepare: false, connection: { lock_timeout: 200 } }),
      probe: async () => {},
      // Lock timeouts are retried (backoff 1–2 s) until the lock goes: the business budget must outlast it.
      worker: { maxBusinessAttempts: 100 },
    });
    expect(poller.stats.limit).toBe(CEILING);
    expect(lines.find((line) => line.message === 'poller_started')?.extra).toMatchObject({
      concurrency: CEILING,
      adaptiveConcurrency: 'on',
      concurrencyFloor: 1,
      concurrencyWindowMs: ADAPTIVE_WINDOW_MS,
    });
    const release = await holdCaseLock(db.client({ max: 1 }), caseId);
    const hot = Array.from({ length: 40 }, (_, i) => stageChange('hot', caseId, i + 2));

    // Act 1: the hot records fail LOCK_TIMEOUT while the row is held.
    const lockedAt = Date.now();
    await fixture.send(queueUrl, hot);
    const firstCutAt = await waitFor('a first cut', () => poller.stats.limit < CEILING, 30_000);
    const firstCutMs = firstCutAt - lockedAt;
    // Each cut takes one window; five cuts (8 → 6 → 4 → 3 → 2 → 1) reach the floor.
    const floorAt = await waitFor(
      'the floor',
      () => poller.stats.limit === 1,
      10 * Math.max(firstCutMs, ADAPTIVE_WINDOW_MS) + 10_000,
    );
    const lowest = poller.stats.limit;
    // One receive at the floor with nothing in flight: only then may the loop ask for the next message.
    await waitFor('a receive at the floor', () => receives.some((call) => call.at > floorAt), 10_000);
    const completedWhileLocked = outcomes.outcomes.filter((o) => o.result === 'COMPLETED').length;
    const receivesAtFloor = receives.filter((call) => call.at > floorAt);

    // Act 2: the lock goes, and a backlog of payments (no hot row) keeps the poller at its limit.
    await release();
    const releasedAt = Date.now();
    const payments = Array.from({ length: 600 }, (_, i) => paymentBody(`adaptive-${i}`, 'acct-adaptive'));
    await fixture.send(queueUrl, payments);
    const risenAt = await waitFor(
      'the limit back above its lowest',
      () => poller.stats.limit > lowest,
      10 * Math.max(firstCutMs, ADAPTIVE_WINDOW_MS) + 10_000,
    );
    await waitFor(
      'every message completed',
      async () => {
        const [row] = await db.sql<{ done: number }[]>`
          select count(*)::int as done from worker_inbox
          where status = 'COMPLETED' and (idempotency_key like 'hot:%' or idempotency_key like 'payment:adaptive-%')
        `;
        return row?.done === hot.length + payments.length;
      },
      60_000,
    );
    await waitFor('the queue drained', () => queueIsEmpty(sqs, queueUrl), 30_000);

    // Assess: the cuts came from contention, each a change of the limit logged (warn), metered and emitted.
    const changes = limitEvents(events);
    const cuts = changes.filter((change) => change.to < change.from && change.at < releasedAt);
    expect(cuts.length).toBeGreaterThan(0);
    expect(cuts[0]?.from).toBe(CEILING);
    for (const cut of cuts) expect(cut.reason).toMatch(/signals of load \(contention [1-9]\d*,/);
    const logged = lines.filter((line) => line.message === 'concurrency_limit_changed');
    expect(logged.map((line) => [line.level, line.extra?.from, line.extra?.to])).toEqual(
      changes.map((change) => [change.to < change.from ? 'warn' : 'info', change.from, change.to]),
    );
    expect(
      logged.every(
        (line) =>
          Object.keys(line.extra ?? {})
            .sort()
            .join() === 'from,reason,to',
      ),
    ).toBe(true);
    // Between the floor and the ceiling, every change a step of the one before.
    for (const [index, change] of changes.entries()) {
      expect(change.to).toBeGreaterThanOrEqual(1);
      expect(change.to).toBeLessThanOrEqual(CEILING);
      if (index > 0) expect(change.from).toBe(changes[index - 1]?.to);
    }
    // Nothing completed while the row was held; at the floor the loop asked SQS for one message at a time.
    expect(completedWhileLocked).toBe(0);
    expect(receivesAtFloor.length).toBeGreaterThan(0);
    expect(receivesAtFloor.filter((call) => call.at < releasedAt).every((call) => call.max === 1)).toBe(true);
    // After the release the limit rose once per quiet window: doubled back toward where the first cut left it, then
    // by one (each logged at info).
    const rises = changes.filter((change) => change.to > change.from);
    expect(rises.length).toBeGreaterThan(0);
    expect(
      rises.filter((rise) => !(rise.at > releasedAt && rise.to <= Math.max(rise.from + 1, 2 * rise.from))),
    ).toEqual([]);
    // Exactly once: one inbox row and one effect per key, the hot case at its last version, nothing in the DLQ.
    const [hotRows] = await db.sql<{ inbox: number; version: number }[]>`
      select (select count(*)::int from worker_inbox where idempotency_key like 'hot:%') as inbox,
             (select version from cases where case_id = ${caseId}) as version
    `;
    expect(hotRows).toEqual({ inbox: hot.length, version: hot.length + 1 });
    const [ledger] = await db.sql<{ entries: number; keys: number }[]>`
      select count(*)::int as entries, count(distinct source_event_id)::int as keys
      from ledger_entries where account_id = 'acct-adaptive'
    `;
    expect(ledger).toEqual({ entries: payments.length, keys: payments.length });
    const completedKeys = outcomes.outcomes
      .filter((o) => o.result === 'COMPLETED' || o.result === 'STALE_VERSION_SKIPPED')
      .map((o) => o.idempotencyKey);
    expect(new Set(completedKeys).size).toBe(completedKeys.length);
    expect(completedKeys.length).toBe(hot.length + payments.length);
    expect(await queueCounts(sqs, dlqUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
    console.info(
      `adaptive limit: first cut after ${firstCutMs} ms, floor ${lowest} after ${floorAt - lockedAt} ms, above it ${risenAt - releasedAt} ms after the release, highest after it ${Math.max(lowest, ...rises.map((r) => r.to))}; test ${Date.now() - startedAt} ms`,
    );
  });

  it('never lowers the limit on business failures: TerminalError, poison bodies, a handler’s own retryable error', async () => {
    // Prepare: a 4-record poller; retryable business failures come back (backoff 1 s) over several windows.
    const startedAt = Date.now();
    const { queueUrl, dlqUrl } = await fixture.queues({ maxReceiveCount: 4, visibilityTimeoutSeconds: 30 });
    const { poller, events, lines, deliveries } = await startTestPoller({
      sqs: fixture.as('poller').sqs,
      queueUrl,
      sql: db.as('worker', { max: 4, prepare: false }),
      probe: async () => {},
      worker: { backoff: { baseSeconds: 1, maxSeconds: 1 } },
    });
    const terminal = Array.from({ length: 20 }, (_, i) =>
      JSON.stringify(
        exampleEnvelope({
          messageType: 'CaseDeadlineCalculationRequested',
          idempotencyKey: `invalid-stage:${i}`,
          aggregateType: 'Case',
          aggregateId: `CASE-B-${i}`,
          payload: { caseId: `CASE-B-${i}`, stage: 'NO-SLA', effectiveAt: '2026-07-06T10:15:00Z' },
        }),
      ),
    );
    const poison = Array.from({ length: 20 }, (_, i) => (i % 2 ? `not json ${i}` : `{"poison":${i}}`));
    const retryable = Array.from({ length: 10 }, (_, i) =>
      JSON.stringify(
        exampleEnvelope({
          messageType: 'AlwaysRetryable',
          idempotencyKey: `always-retryable:${i}`,
          aggregateType: 'Test',
          aggregateId: `retry-${i}`,
          payload: {},
        }),
      ),
    );

    // Act: every failure settles; the retryable ones keep failing across at least three windows.
    await fixture.send(queueUrl, [...terminal, ...poison, ...retryable]);
    await waitFor(
      'every message settled or dead-lettered',
      async () => {
        const [row] = await db.sql<{ quarantined: number }[]>`
          select count(*)::int as quarantined from worker_quarantine
        `;
        const dlq = await queueCounts(sqs, dlqUrl);
        return (row?.quarantined ?? 0) >= terminal.length + poison.length && dlq.visible === retryable.length;
      },
      60_000,
    );
    const spanOf = () => (deliveries.at(-1)?.at ?? 0) - (deliveries[0]?.at ?? 0);
    // The retries' backoff has jitter: on a quiet machine they may all settle within three windows. More poison, a
    // wave at a time, until the failures span them (the windows must close while only business failures arrive).
    for (let wave = 0; spanOf() <= 3 * ADAPTIVE_WINDOW_MS; wave += 1) {
      const quarantinedBefore = terminal.length + poison.length + wave * 4;
      await fixture.send(
        queueUrl,
        Array.from({ length: 4 }, (_, i) => `not json, wave ${wave}, ${i}`),
      );
      await waitFor(
        `wave ${wave} of poison quarantined`,
        async () => {
          const [row] = await db.sql<{ quarantined: number }[]>`
            select count(*)::int as quarantined from worker_quarantine
          `;
          return (row?.quarantined ?? 0) >= quarantinedBefore + 4;
        },
        60_000,
      );
    }
    const span = spanOf();

    // Assess: the windows closed (the failures spanned several), and none of them moved the limit.
    expect(span).toBeGreaterThan(3 * ADAPTIVE_WINDOW_MS);
    expect(deliveries.length).toBeGreaterThanOrEqual(terminal.length + poison.length + 3 * retryable.length);
    expect(limitEvents(events)).toEqual([]);
    expect(lines.filter((line) => line.message === 'concurrency_limit_changed')).toEqual([]);
    expect(poller.stats.limit).toBe(4);
    console.info(
      `business failures: ${deliveries.length} deliveries over ${span} ms; test ${Date.now() - startedAt} ms`,
    );
  });

  it('keeps the limit at POLLER_CONCURRENCY with adaptive concurrency off, whatever the lock timeouts', async () => {
    // Prepare: the same hot row as above, adaptive concurrency off.
    const caseId = `HOT-OFF-${Date.now()}`;
    await db.sql`insert into cases (case_id, stage, version) values (${caseId}, 'NEW', 1)`;
    const { queueUrl } = await fixture.queues({ maxReceiveCount: 100, visibilityTimeoutSeconds: 30 });
    const { poller, events, lines, outcomes } = await startTestPoller({
      sqs: fixture.as('poller').sqs,
      queueUrl,
      sql: db.as('worker', { max: 4, prepare: false, connection: { lock_timeout: 200 } }),
      probe: async () => {},
      poller: { adaptiveConcurrency: { enabled: false } },
      worker: { maxBusinessAttempts: 100 },
    });
    const release = await holdCaseLock(db.client({ max: 1 }), caseId);

    // Act: lock timeouts for longer than three windows.
    await fixture.send(
      queueUrl,
      Array.from({ length: 20 }, (_, i) => stageChange('off', caseId, i + 2)),
    );
    const lockTimeouts = () => outcomes.outcomes.filter((o) => o.failureCode === 'LOCK_TIMEOUT');
    await waitFor(
      'lock timeouts over three windows',
      () => {
        const seen = lockTimeouts();
        return seen.length > 0 && (seen.at(-1)?.at ?? 0) - (seen[0]?.at ?? 0) > 3 * ADAPTIVE_WINDOW_MS;
      },
      30_000,
    );
    await release();

    // Assess: the limit never moved, and the poller used all of it.
    expect(lockTimeouts().length).toBeGreaterThan(4);
    expect(limitEvents(events)).toEqual([]);
    expect(lines.filter((line) => line.message === 'concurrency_limit_changed')).toEqual([]);
    expect(poller.stats).toMatchObject({ limit: 4, maxInFlight: 4 });
    expect(lines.find((line) => line.message === 'poller_started')?.extra).toMatchObject({
      concurrency: 4,
      adaptiveConcurrency: 'off',
    });
  });
});
