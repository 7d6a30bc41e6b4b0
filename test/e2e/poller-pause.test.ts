import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { paginateScan } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { createDatabaseProbe } from '../../lambda/breaker/create-database-probe.ts';
import { exampleDynamoHandlers } from '../../lambda/domain/dynamodb/index.ts';
import { createBatchEngine } from '../../lambda/runtimes/create-batch-engine.ts';
import type { Poller, PollerEvent } from '../../lambda/runtimes/poller/start-poller.ts';
import { createDynamoStore } from '../../lambda/stores/dynamodb/dynamo-store.ts';
import { probeDynamoStore } from '../../lambda/stores/dynamodb/probe-dynamo-store.ts';
import { startLocalPoller } from '../../tools/local/local-poller.ts';
import { queueCounts, queueIsEmpty } from '../../tools/local/local-queues.ts';
import { createTestDatabase } from '../support/database.ts';
import { useTestDynamoDb } from '../support/dynamodb.ts';
import { paymentBody } from '../support/payment-body.ts';
import { proxiedDatabase } from '../support/proxied-database.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import { waitFor } from '../support/wait-for.ts';
import { localQueueFixture } from './local-queue-fixture.ts';
import { startTestPoller } from './poller-fixture.ts';

// The components connect as their database roles (provisioned by the migration function's code); the test's own
// setup and assertions as the database's owner.
const db = await createTestDatabase({ roles: true });
const fixture = await localQueueFixture();
const dynamo = useTestDynamoDb();
const { sqs } = fixture;
/** The poller's client (its task role's key). */
const pollerSqs = fixture.as('poller').sqs;
/** Every ReceiveMessage the poller's client sends, with its time: counted at the SDK, below the poller. */
const receiveCalls: number[] = [];
pollerSqs.middlewareStack.add(
  (next, context) => (args) => {
    if (context.commandName === 'ReceiveMessageCommand') receiveCalls.push(Date.now());
    return next(args);
  },
  { step: 'initialize', name: 'countReceives' },
);

const payment = (id: string) => paymentBody(id, 'acct-pause');

describe('Poller database-health pause (database cut by a TCP proxy for 10 s)', () => {
  it('stops receiving (no receive beyond the probes while paused), spends at most one receive count per message, and resumes by itself with one effect per key', async () => {
    // Prepare: engine and probe reach the database through one proxy.
    const { proxy, connect } = await proxiedDatabase(db.roleUrl('worker'));
    const probeCalls: number[] = [];
    const probe = createDatabaseProbe(() => connect(1), 1000);
    const { queueUrl, dlqUrl } = await fixture.queues({ maxReceiveCount: 5, visibilityTimeoutSeconds: 5 });
    const { poller, events, deliveries } = await startTestPoller({
      sqs: pollerSqs,
      queueUrl,
      sql: connect(2),
      probe: () => {
        probeCalls.push(Date.now());
        return probe();
      },
      poller: {
        visibilitySeconds: 5,
        pause: { probeBackoffBaseMs: 500, probeBackoffMaxMs: 1000, halfOpenMs: 500, probeTimeoutMs: 1000 },
      },
    });

    // Act 1: healthy.
    await fixture.send(
      queueUrl,
      Array.from({ length: 10 }, (_, i) => payment(`before-${i}`)),
    );
    await waitFor(
      'the first payments',
      async () => {
        const [row] = await db.sql`select count(*)::int as count from ledger_entries`;
        return row?.count === 10;
      },
      15_000,
    );

    // Act 2: cut the database for 10 s while a backlog arrives.
    proxy.down();
    const cutAt = Date.now();
    await fixture.send(
      queueUrl,
      Array.from({ length: 30 }, (_, i) => payment(`during-${i}`)),
    );
    await waitFor('the pause', () => poller.status === 'open', 10_000);
    await sleep(Math.max(0, cutAt + 10_000 - Date.now()));
    proxy.up();
    const upAt = Date.now();
    await waitFor('receiving again', () => poller.status !== 'open', 10_000);
    await waitFor(
      'every payment applied',
      async () => {
        const [row] = await db.sql`select count(*)::int as count from ledger_entries`;
        return row?.count === 40;
      },
      30_000,
    );
    await waitFor('the queue drained', () => queueIsEmpty(sqs, queueUrl), 15_000);
    // Half-open receives one record at a time until halfOpenMs of good probes close it; the queue may drain first.
    await waitFor('the pause closed', () => poller.status === 'closed', 10_000);

    // Assess: while paused (from the pause's own event times), ReceiveMessage calls at most the probes — none, in
    // fact: the pause aborts a pending long poll and the loop waits for the probes.
    const changes = events.flatMap((e) =>
      e.event.type === 'pause' ? [{ at: e.at, status: e.event.status }] : [],
    );
    const pausedAt = changes.find((c) => c.status === 'open')?.at ?? 0;
    const resumedAt = changes.find((c) => c.at >= pausedAt && c.status !== 'open')?.at ?? 0;
    expect(pausedAt).toBeGreaterThan(cutAt);
    expect(resumedAt).toBeGreaterThan(upAt);
    const receivesWhilePaused = receiveCalls.filter((at) => at > pausedAt && at < resumedAt).length;
    const probesWhilePaused = probeCalls.filter((at) => at > pausedAt && at <= resumedAt).length;
    expect(probesWhilePaused).toBeGreaterThan(0);
    expect(receivesWhilePaused).toBeLessThanOrEqual(probesWhilePaused);
    expect(receivesWhilePaused).toBe(0);
    // The pause was entered and left, logged as events.
    const statuses = events.flatMap((e) => (e.event.type === 'pause' ? [e.event.status] : []));
    expect(statuses[0]).toBe('open');
    expect(statuses.at(-1)).toBe('closed');
    // No message was delivered more than once during the outage.
    const during = new Map<string, number>();
    for (const d of deliveries.filter((d) => d.at >= cutAt && d.at <= upAt)) {
      during.set(d.messageId, (during.get(d.messageId) ?? 0) + 1);
    }
    expect([...during.values()].every((count) => count <= 1)).toBe(true);
    // Processing resumed by itself: one effect per key, nothing in the DLQ.
    const [ledger] =
      await db.sql`select count(*)::int as entries, count(distinct source_event_id)::int as keys from ledger_entries`;
    expect(ledger).toEqual({ entries: 40, keys: 40 });
    expect(await queueCounts(sqs, dlqUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
    await proxy.close();
  });
});

describe('Poller store-health pause on DynamoDB (DynamoDB cut by a TCP proxy for 10 s)', () => {
  it('pauses on the engine’s connection-class failure, probes with a GetItem that fails while DynamoDB is cut, resumes by itself, and applies each key once', async () => {
    // Prepare: the engine and the probe reach DynamoDB Local through one proxy, with one client (as the poller's
    // composition wires them: the probe goes through the store's own client). Both DynamoDB and SQS are called as
    // the operator here (the IAM layer fronts fauxqs only in this file's fixture); the poller's key is its own.
    const table = await dynamo.createTable('pause');
    const target = new URL(dynamo.endpoint);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
    const client = new DynamoDBClient({
      endpoint: `http://127.0.0.1:${proxy.port}`,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });
    const store = createDynamoStore({ client, tableName: table });
    const probeCalls: { at: number; ok: boolean }[] = [];
    const { queueUrl, dlqUrl } = await fixture.queues({ maxReceiveCount: 5, visibilityTimeoutSeconds: 5 });
    const events: { at: number; event: PollerEvent }[] = [];
    let poller: Poller | undefined;
    const engine = createBatchEngine({
      consumer: 'case-worker',
      handlers: exampleDynamoHandlers,
      store,
      recordConcurrency: 10,
      backoff: { baseSeconds: 1, maxSeconds: 1 },
      logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
      metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
      onRecordSettled: (outcome) => poller?.recordSettled(outcome),
    });
    const receivesBefore = receiveCalls.length;
    const local = await startLocalPoller({
      bindOutcomes: (started) => {
        poller = started;
      },
      sqs: pollerSqs,
      inspect: sqs,
      queueUrl,
      processBatch: engine.processBatch,
      concurrency: 10,
      waitSeconds: 1,
      visibilitySeconds: 5,
      probe: () =>
        probeDynamoStore(store, 'case-worker', 1000).then(
          () => void probeCalls.push({ at: Date.now(), ok: true }),
          (error: unknown) => {
            probeCalls.push({ at: Date.now(), ok: false });
            throw error;
          },
        ),
      pause: { probeBackoffBaseMs: 500, probeBackoffMaxMs: 1000, halfOpenMs: 500, probeTimeoutMs: 1000 },
      logger: new Logger({ serviceName: 'case-worker', logLevel: 'SILENT' }),
      metrics: new Metrics({ namespace: 'SqsInboxWorkerTest', serviceName: 'case-worker' }),
      onEvent: (event) => events.push({ at: Date.now(), event }),
    });
    const applied = async () => {
      let count = 0;
      for await (const page of paginateScan(
        { client: dynamo.doc },
        { TableName: table, ConsistentRead: true },
      )) {
        count += (page.Items ?? []).filter((item) => String(item.PK).startsWith('LEDGER#')).length;
      }
      return count;
    };
    try {
      // Act 1: healthy.
      await fixture.send(
        queueUrl,
        Array.from({ length: 10 }, (_, i) => payment(`ddb-before-${i}`)),
      );
      await waitFor('the first payments', async () => (await applied()) === 10, 15_000);

      // Act 2: DynamoDB cut for 10 s (connections closed, new ones refused) while a backlog arrives.
      proxy.refuse();
      const cutAt = Date.now();
      await fixture.send(
        queueUrl,
        Array.from({ length: 30 }, (_, i) => payment(`ddb-during-${i}`)),
      );
      await waitFor('the pause', () => local.poller.status === 'open', 10_000);
      await sleep(Math.max(0, cutAt + 10_000 - Date.now()));
      proxy.up();
      const upAt = Date.now();
      await waitFor('receiving again', () => local.poller.status !== 'open', 10_000);
      await waitFor('every payment applied', async () => (await applied()) === 40, 30_000);
      await local.drain({ timeoutMs: 15_000 });
      await waitFor('the pause closed', () => local.poller.status === 'closed', 10_000);

      // Assess: while paused, no receive, only probes — the GetItem failed while DynamoDB was cut, and succeeded
      // once it was back.
      const changes = events.flatMap((e) =>
        e.event.type === 'pause' ? [{ at: e.at, status: e.event.status }] : [],
      );
      const pausedAt = changes.find((c) => c.status === 'open')?.at ?? 0;
      const resumedAt = changes.find((c) => c.at >= pausedAt && c.status !== 'open')?.at ?? 0;
      expect(pausedAt).toBeGreaterThan(cutAt);
      expect(resumedAt).toBeGreaterThan(upAt);
      const receivesWhilePaused = receiveCalls
        .slice(receivesBefore)
        .filter((at) => at > pausedAt && at < resumedAt).length;
      expect(receivesWhilePaused).toBe(0);
      const probesWhilePaused = probeCalls.filter((p) => p.at > pausedAt && p.at <= resumedAt);
      expect(probesWhilePaused.some((p) => !p.ok && p.at < upAt)).toBe(true);
      expect(probesWhilePaused.at(-1)?.ok).toBe(true);
      expect(changes[0]?.status).toBe('open');
      expect(changes.at(-1)?.status).toBe('closed');
      // Processing resumed by itself: one ledger item per key, nothing in the DLQ.
      expect(await applied()).toBe(40);
      expect(await queueCounts(sqs, dlqUrl)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
    } finally {
      await local.stop();
      client.destroy();
      await proxy.close();
    }
  });
});
