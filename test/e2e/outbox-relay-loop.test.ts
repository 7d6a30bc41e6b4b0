import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { enqueueOutbox } from '../../lambda/outbox/index.ts';
import type { OutboxSqsSender } from '../../lambda/outbox/relay-outbox.ts';
import { runOutboxRelayLoop } from '../../tools/local/outbox-relay-loop.ts';
import { createTestDatabase } from '../support/database.ts';
import { caseStageEnvelope } from '../support/sqs-event.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

// The components connect as their database roles (provisioned by the migration function's code); the test's own
// setup and assertions as the database's owner.
const db = await createTestDatabase({ roles: true });
const local = await localQueueFixture();

const enqueueCase = (caseId: string) => db.sql.begin((sql) => enqueueOutbox(sql, caseStageEnvelope(caseId)));

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 10_000) {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(50);
  }
}

const pendingCount = async () =>
  (await db.sql<{ n: number }[]>`select count(*)::int as n from outbox_events where status = 'PENDING'`)[0]
    ?.n ?? -1;

describe('Function: runOutboxRelayLoop()', () => {
  it('keeps publishing rows committed while it runs, survives a failing run and stops on abort', async () => {
    // Prepare
    const { queueUrl } = await local.queues();
    const stop = new AbortController();
    let calls = 0;
    const flaky: OutboxSqsSender = {
      send(command: SendMessageBatchCommand) {
        calls += 1;
        if (calls === 1) return Promise.reject(new Error('injected: SQS unavailable'));
        return local.as('relay').sqs.send(command);
      },
    };
    await enqueueCase(`CASE-${randomUUID()}`);

    // Act
    const loop = runOutboxRelayLoop({
      sql: db.as('relay'),
      sqs: flaky,
      queueUrl,
      signal: stop.signal,
      idleMs: 20,
      backoff: { baseMs: 50, maxMs: 100 },
    });
    await waitFor(async () => (await pendingCount()) === 0);
    for (let i = 0; i < 5; i++) await enqueueCase(`CASE-${randomUUID()}`);
    await waitFor(async () => (await pendingCount()) === 0);
    stop.abort();
    const totals = await loop;

    // Assess
    expect(totals).toMatchObject({ published: 6, failed: 1, errors: 0 });
    expect(totals.runs).toBeGreaterThanOrEqual(3);
    expect(await local.receiveAll(queueUrl)).toHaveLength(6);
  });
});
