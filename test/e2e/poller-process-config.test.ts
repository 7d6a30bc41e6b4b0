import { describe, expect, it } from 'vitest';
import { exampleEnvelope } from '../../tools/local/example-envelope.ts';
import { queueCounts, queueIsEmpty } from '../../tools/local/local-queues.ts';
import { createTestDatabase } from '../support/database.ts';
import { localQueueFixture } from './local-queue-fixture.ts';
import { pollerProcesses, waitFor } from './poller-process-fixture.ts';

// The deployable poller (bin/poller.ts as a child process) with the settings a deploy gives it: what it refuses at
// start, and what it runs.
// The components connect as their database roles (provisioned by the migration function's code); the test's own
// setup and assertions as the database's owner.
const db = await createTestDatabase({ roles: true });
const fixture = await localQueueFixture();
const startPollerProcess = pollerProcesses({
  databaseUrl: db.roleUrl('worker'),
  sqsEndpoint: fixture.endpoint,
});

const payment = (id: string) =>
  JSON.stringify(
    exampleEnvelope({
      messageType: 'PaymentCaptured',
      idempotencyKey: id,
      aggregateType: 'Payment',
      aggregateId: id,
      payload: { paymentId: id, accountId: `acct-${id.length % 5}`, amount: 10, currency: 'EUR' },
    }),
  );

/** Inbox rows and ledger entries of the keys starting with `prefix`, in PostgreSQL. */
const written = async (prefix: string) => {
  const [row] = await db.sql<{ inbox: number; ledger: number }[]>`
    select (select count(*)::int from worker_inbox where idempotency_key like ${`${prefix}%`}) as inbox,
           (select count(*)::int from ledger_entries where source_event_id like ${`${prefix}%`}) as ledger
  `;
  return row ?? { inbox: 0, ledger: 0 };
};

describe('Poller process (bin/poller.ts): the store and commit-mode settings', () => {
  it('refuses WORKER_STORE=dynamodb without DYNAMODB_TABLE at start (exit 2, naming it, not a database variable), writing nothing to PostgreSQL', async () => {
    // Prepare: a message waiting, and a DATABASE_URL the poller could (wrongly) write to
    const { queueUrl } = await fixture.queues({ visibilityTimeoutSeconds: 30 });
    await fixture.send(queueUrl, [payment('store-0')]);

    // Act
    const poller = startPollerProcess(queueUrl, { WORKER_STORE: 'dynamodb', POLLER_CONCURRENCY: '' });
    await waitFor(
      'the poller exits or writes',
      async () => poller.child.exitCode !== null || (await written('store-')).inbox > 0,
      30_000,
    );
    // A poller that wrote instead of refusing is stopped here (and the exit code below says so).
    if (poller.child.exitCode === null) poller.child.kill('SIGKILL');
    const exit = await poller.exited;

    // Assess: refused, nothing written to PostgreSQL, the message never received
    expect(exit.code, poller.stderr()).toBe(2);
    expect(poller.stderr()).toContain(
      'WORKER_STORE=dynamodb needs DYNAMODB_TABLE, the table of inbox and domain items; set it',
    );
    expect(poller.stderr()).not.toContain('DATABASE_URL');
    expect(poller.stderr()).not.toContain('DB_POOL_SIZE');
    expect(await written('store-')).toEqual({ inbox: 0, ledger: 0 });
    expect(await queueCounts(fixture.sqs, queueUrl)).toMatchObject({ visible: 1, inFlight: 0 });
  });

  it('runs WORKER_COMMIT_MODE=per-batch with DB_POOL_SIZE 8 and no WORKER_RECORD_CONCURRENCY: every key applied once', async () => {
    // Prepare: 120 payments, 40 of them sent twice
    const { queueUrl } = await fixture.queues({ visibilityTimeoutSeconds: 30 });
    const unique = Array.from({ length: 120 }, (_, i) => payment(`batch-${i}`));
    await fixture.send(queueUrl, [...unique, ...unique.slice(0, 40)]);

    // Act: the fixture's DB_POOL_SIZE is 8; POLLER_CONCURRENCY left to its per-batch default
    const poller = startPollerProcess(queueUrl, { WORKER_COMMIT_MODE: 'per-batch', POLLER_CONCURRENCY: '' });
    await waitFor('the queue drained', () => queueIsEmpty(fixture.sqs, queueUrl), 60_000, [poller]);
    poller.child.kill('SIGTERM');
    const exit = await poller.exited;

    // Assess: it started, applied each key once and stopped cleanly
    expect(exit.code, poller.stderr()).toBe(0);
    expect(await written('batch-')).toEqual({ inbox: 120, ledger: 120 });
    expect(poller.count('worker_message_completed')).toBe(120);
    expect(poller.count('worker_message_duplicate')).toBeGreaterThanOrEqual(40);
  });
});
