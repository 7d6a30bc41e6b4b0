import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleEnvelope } from '../../tools/local/example-envelope.ts';
import { localCredentials } from '../../tools/local/iam/local-identities.ts';
import { type PollerTaskExit, type PollerTasks, startPollerTasks } from '../../tools/local/poller-process.ts';
import { createTestDatabase } from '../support/database.ts';
import { waitFor } from '../support/wait-for.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

const fixture = await localQueueFixture();
const db = await createTestDatabase({ roles: true });
const ENTRY = fileURLToPath(new URL('../fixtures/function-host/greedy-poller.ts', import.meta.url));
const running: PollerTasks[] = [];
afterEach(async () => {
  for (const tasks of running.splice(0)) await tasks.stop();
});

describe('Function: startPollerTasks()', () => {
  it('kills the poller task above its memory as ECS does (exit 137), starts a new one, which applies the message', async () => {
    // Prepare: one message whose first delivery makes the handler allocate past the task's 192 MiB.
    const { queueUrl } = await fixture.queues({ visibilityTimeoutSeconds: 2 });
    const idempotencyKey = 'memory-hungry:1';
    await fixture.send(queueUrl, [
      JSON.stringify(
        exampleEnvelope({
          messageType: 'MemoryHungry',
          idempotencyKey,
          aggregateType: 'test',
          aggregateId: '1',
          payload: {},
        }),
      ),
    ]);
    const exits: PollerTaskExit[] = [];

    // Act
    const tasks = await startPollerTasks({
      entry: ENTRY,
      memoryMiB: 192,
      restartDelayMs: 200,
      environment: {
        AWS_REGION: 'us-east-1',
        // The task role's local key, and the worker's database role, as the poller runs deployed.
        AWS_ACCESS_KEY_ID: localCredentials('poller').accessKeyId,
        AWS_SECRET_ACCESS_KEY: localCredentials('poller').secretAccessKey,
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        POWERTOOLS_METRICS_DISABLED: 'true',
        DATABASE_URL: db.roleUrl('worker'),
        DB_POOL_SIZE: '2',
        WORKER_CONSUMER: 'memory-hungry',
        WORKER_QUEUE_URL: queueUrl,
        SQS_ENDPOINT: fixture.endpoint,
        POLLER_CONCURRENCY: '2',
        POLLER_WAIT_SECONDS: '1',
        POLLER_VISIBILITY_SECONDS: '2',
        POLLER_STOP_TIMEOUT_SECONDS: '5',
      },
      onExit: (exit) => exits.push(exit),
    });
    running.push(tasks);
    await waitFor(
      'the message applied',
      async () => {
        const rows = await db.sql`
          select 1 from worker_inbox where idempotency_key = ${idempotencyKey} and status = 'COMPLETED'
        `;
        return rows.length === 1;
      },
      60_000,
    );
    const last = await tasks.stop();

    // Assess: the first task killed for memory, reported as ECS reports it; the second applied the redelivery.
    expect(exits[0]).toEqual({
      task: 1,
      exitCode: 137,
      stoppedReason: 'OutOfMemoryError: Container killed due to memory usage',
      outOfMemory: true,
      peakMiB: 192,
      stopped: false,
    });
    expect(last).toMatchObject({ task: 2, exitCode: 0, outOfMemory: false, stopped: true });
    expect(tasks.stats).toMatchObject({ tasksStarted: 2, outOfMemory: 1, crashes: 0 });
    // Applied by a redelivery (the handler applies only those); the killed attempt left nothing (rolled back).
    const [row] = await db.sql`
      select status, result_ref from worker_inbox where idempotency_key = ${idempotencyKey}
    `;
    expect(row).toEqual({ status: 'COMPLETED', result_ref: 'memory-hungry/applied' });
  });
});
