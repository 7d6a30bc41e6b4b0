import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { RoleFunction } from '../../lambda/postgres/provision-roles.ts';
import { resolveWorkerSettings } from '../../lib/resolve-worker-settings.ts';
import { stageSettings } from '../../lib/stage-settings.ts';
import { bigPaymentJson } from '../../tools/local/big-payment.ts';
import {
  type EventSourceMapping,
  type InvocationReport,
  startEventSourceMapping,
} from '../../tools/local/event-source-mapping.ts';
import {
  type FunctionHost,
  type FunctionInvocation,
  startFunctionHost,
} from '../../tools/local/function-host.ts';
import { OutcomeRecorder } from '../../tools/local/outcome-recorder.ts';
import { putLargeObject } from '../../tools/local/put-large-object.ts';
import { localWorkerFunction } from '../../tools/local/stack-compute.ts';
import { createTestDatabase } from '../support/database.ts';
import { paymentBody } from '../support/payment-body.ts';
import { sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';
import { waitFor } from '../support/wait-for.ts';
import { localQueueFixture } from './local-queue-fixture.ts';

const fixture = await localQueueFixture();
const db = await createTestDatabase({ roles: true });
// The operator's S3 client (the test's uploads); the worker function signs with its role's key.
const s3 = fixture.s3;
const module = (name: string) =>
  fileURLToPath(new URL(`../fixtures/function-host/${name}.ts`, import.meta.url));
const running: { stop(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const item of running.splice(0).reverse()) await item.stop();
});

/** The local stack the dev stage's worker function runs against: this file's database, as the worker's role. */
const LOCAL_STACK = {
  databaseUrl: db.url,
  databaseRoles: { names: db.roles, url: (fn: RoleFunction) => db.roleUrl(fn) },
  sqsEndpoint: fixture.endpoint,
  region: 'us-east-1',
  s3,
  dynamodb: undefined,
};

/** A host of a fixture module, its invocations collected. */
async function host(name: string, memorySizeMb: number, timeoutMs: number) {
  const invocations: FunctionInvocation[] = [];
  const started = await startFunctionHost({
    entry: module(name),
    functionName: name,
    memorySizeMb,
    timeoutMs,
    environment: {},
    onInvocation: (invocation) => invocations.push(invocation),
  });
  running.push(started);
  return { host: started, invocations };
}

/** The mapping in front of `invoker` on `queueUrl`, one invocation at a time, its reports collected. */
async function mapping(queueUrl: string, invoker: FunctionHost) {
  const reports: InvocationReport[] = [];
  const esm: EventSourceMapping = await startEventSourceMapping({
    // Lambda's event source mapping polls with the function's role.
    sqs: fixture.as('worker').sqs,
    queueUrl,
    invoker,
    maxConcurrency: 1,
    waitTimeSeconds: 1,
    onInvocation: (report) => reports.push(report),
  });
  running.push(esm);
  return { esm, reports };
}

const gone = (pid: number) => {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
};

describe('Function: startFunctionHost()', () => {
  it('kills an environment above its memory size as Lambda does, fails its batch whole, and runs the redelivery in a new one', async () => {
    // Prepare: three messages, received as one batch; the handler allocates past 128 MB on a first delivery.
    const { queueUrl } = await fixture.queues({ visibilityTimeoutSeconds: 1 });
    await fixture.send(queueUrl, ['a', 'b', 'c']);
    const { host: greedy, invocations } = await host('greedy', 128, 20_000);

    // Act
    const { esm, reports } = await mapping(queueUrl, greedy);
    await waitFor(
      'a successful invocation',
      () => reports.some((report) => report.result === 'success'),
      30_000,
    );
    await esm.drain();

    // Assess: the kill, reported as Lambda reports it; the whole batch back on the queue.
    const [killed] = reports as [InvocationReport];
    expect(killed).toMatchObject({
      result: 'batch-failure',
      reason: 'out-of-memory',
      errorType: 'Runtime.OutOfMemory',
      detail: `RequestId: ${killed.awsRequestId} Error: Runtime exited with error: signal: killed`,
      function: { coldStart: true, memorySizeMb: 128, maxMemoryUsedMb: 128 },
    });
    expect(killed.messageIds).toHaveLength(3);
    expect([...killed.failedMessageIds].sort()).toEqual([...killed.messageIds].sort());
    expect(killed.function?.report).toMatch(
      /^REPORT RequestId: \S+\tDuration: [\d.]+ ms\tBilled Duration: \d+ ms\tMemory Size: 128 MB\tMax Memory Used: 128 MB\tInit Duration: [\d.]+ ms\tStatus: error\tError Type: Runtime\.OutOfMemory$/,
    );
    const [first] = invocations as [FunctionInvocation];
    expect(gone(first.pid)).toBe(true);
    // The redelivery (its receive count spent) in a new environment: a cold start, which succeeds.
    const succeeded = reports.find((report) => report.result === 'success');
    expect(succeeded?.function?.coldStart).toBe(true);
    expect(succeeded?.function?.environmentId).not.toBe(killed.function?.environmentId);
    expect(succeeded?.response).toEqual({ batchItemFailures: [], receiveCounts: ['2', '2', '2'] });
    expect(esm.stats).toMatchObject({ outOfMemory: 1, deleted: 3, errors: 0, timeouts: 0 });
    expect(greedy.stats).toMatchObject({ outOfMemory: 1, coldStarts: 2, peakMemoryMb: 128 });
  });

  it('kills an environment at the function timeout; the next invocation is a cold start in a new process', async () => {
    // Prepare
    const { host: sleepy } = await host('sleepy', 128, 1000);
    const delivery = (receiveCount: number) => sqsEvent([sqsRecordFactory('x', { receiveCount })]);

    // Act
    const timedOut = await sleepy.invoke(delivery(1), { awsRequestId: 'sleeps-past-its-timeout' });
    const next = await sleepy.invoke(delivery(2), { awsRequestId: 'after-the-timeout' });
    const warm = await sleepy.invoke(delivery(2), { awsRequestId: 'warm' });

    // Assess
    expect(timedOut).toMatchObject({
      ok: false,
      reason: 'timeout',
      errorType: 'Sandbox.Timedout',
      detail: 'Task timed out after 1.00 seconds',
      coldStart: true,
    });
    expect(timedOut.report).toMatch(/\tStatus: timeout$/);
    expect(gone(timedOut.pid)).toBe(true);
    expect(next).toMatchObject({ ok: true, coldStart: true, response: { batchItemFailures: [] } });
    expect(next.pid).not.toBe(timedOut.pid);
    expect(warm).toMatchObject({
      ok: true,
      coldStart: false,
      pid: next.pid,
      environmentId: next.environmentId,
    });
    expect(sleepy.stats).toMatchObject({ invocations: 3, timeouts: 1, coldStarts: 2 });
  });

  it('keeps the environment of a handler that throws, and starts anew after an init that fails', async () => {
    // Prepare
    const { host: throws } = await host('throws', 128, 5000);
    const { host: failsInit } = await host('fails-init', 128, 5000);
    const delivery = (receiveCount: number) => sqsEvent([sqsRecordFactory('x', { receiveCount })]);

    // Act
    const thrown = await throws.invoke(delivery(1), { awsRequestId: 'throws' });
    const after = await throws.invoke(delivery(2), { awsRequestId: 'after-the-throw' });
    const init = await failsInit.invoke(delivery(1), { awsRequestId: 'init-1' });
    const again = await failsInit.invoke(delivery(1), { awsRequestId: 'init-2' });

    // Assess: the runtime survives a handler's error; an environment whose init failed is replaced.
    expect(thrown).toMatchObject({
      ok: false,
      reason: 'error',
      errorType: 'TypeError',
      detail: 'TypeError: no such thing',
    });
    expect(after).toMatchObject({ ok: true, coldStart: false, pid: thrown.pid });
    expect(init).toMatchObject({
      ok: false,
      reason: 'error',
      errorType: 'RangeError',
      detail: 'RangeError: WIDGET_COUNT must be a whole number',
      coldStart: true,
    });
    expect(again).toMatchObject({ ok: false, reason: 'error', coldStart: true });
    expect(again.environmentId).not.toBe(init.environmentId);
  });

  it('runs batches through the deployed worker entry, as the dev stage synthesizes it, against PostgreSQL and fauxqs', async () => {
    // Prepare: the dev stage's worker function, its settings those resolveWorkerSettings gives the stage.
    const stage = JSON.parse(readFileSync(fileURLToPath(new URL('../../cdk.json', import.meta.url)), 'utf8'))
      .context.stages.dev;
    const resolved = resolveWorkerSettings(stageSettings('dev', stage));
    const settings = await localWorkerFunction(LOCAL_STACK, {
      stage: 'dev',
      environment: { WORKER_CONSUMER: 'host-test' },
    });
    const recorder = new OutcomeRecorder();
    const worker = await startFunctionHost({ ...settings, onOutput: (line) => recorder.recordLogLine(line) });
    running.push(worker);
    const { queueUrl } = await fixture.queues({ visibilityTimeoutSeconds: 30 });
    await fixture.send(
      queueUrl,
      Array.from({ length: 12 }, (_, n) => paymentBody(`host-${n}`, 'acct-host')),
    );

    // Act
    const { esm, reports } = await mapping(queueUrl, worker);
    await esm.drain({ timeoutMs: 30_000 });

    // Assess: the stage's limits, one warm environment for every batch, one effect per message.
    expect(settings.memorySizeMb).toBe(resolved.memorySize);
    expect(settings.timeoutMs).toBe(resolved.timeout.toMilliseconds());
    expect(settings.environment.PAYLOAD_MAX_BYTES).toBe(String(resolved.maxPayloadBytes));
    expect(settings.environment.DB_POOL_SIZE).toBe(String(resolved.dbPoolSize));
    expect(settings.environment).not.toHaveProperty('DB_HOST');
    expect(new URL(settings.environment.DATABASE_URL as string).username).toBe(db.roles.worker);
    const [{ count }] = (await db.sql`
      select count(*)::int as count from ledger_entries where source_event_id like 'host-%'
    `) as unknown as [{ count: number }];
    expect(count).toBe(12);
    expect(recorder.counts()).toEqual({ COMPLETED: 12 });
    expect(reports.length).toBeGreaterThanOrEqual(2);
    expect(reports.every((report) => report.result === 'success')).toBe(true);
    expect(worker.stats.coldStarts).toBe(1);
    expect(worker.stats.peakMemoryMb).toBeGreaterThan(0);
    expect(worker.stats.peakMemoryMb).toBeLessThan(resolved.memorySize);
  });

  it("holds a payloadRef at the stack's derived limit within the stage's memory, and is killed for memory with less", async () => {
    // Prepare: a PaymentCaptured whose payload (line items) is the dev stage's PAYLOAD_MAX_BYTES of JSON, in S3.
    const settings = await localWorkerFunction(LOCAL_STACK, {
      stage: 'dev',
      environment: { WORKER_CONSUMER: 'payload-test' },
    });
    const limit = Number(settings.environment.PAYLOAD_MAX_BYTES);
    // The stack's payload bucket and source queue, as the worker role's grants name them.
    const bucket = await fixture.bucket();
    const { queueArn } = await fixture.queues();
    const payloadRef = async (paymentId: string) => {
      const bytes = bigPaymentJson(paymentId, limit);
      await putLargeObject(s3, bucket, paymentId, bytes);
      return {
        bucket,
        key: paymentId,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        size: bytes.length,
      };
    };
    const delivery = async (paymentId: string) => {
      const { payload: _inline, ...envelope } = JSON.parse(paymentBody(paymentId, 'acct-big'));
      return sqsEvent([
        sqsRecordFactory(
          { ...envelope, payloadRef: await payloadRef(paymentId) },
          { eventSourceARN: queueArn },
        ),
      ]);
    };
    const atLimit = await startFunctionHost(settings);
    running.push(atLimit);
    // Lambda's smallest memory: the same payload needs well over it.
    const smaller = await startFunctionHost({ ...settings, memorySizeMb: 128 });
    running.push(smaller);

    // Act
    const fits = await atLimit.invoke(await delivery('big-fits'), { awsRequestId: 'fits' });
    const killed = await smaller.invoke(await delivery('big-killed'), { awsRequestId: 'killed' });

    // Assess
    expect(fits).toMatchObject({ ok: true, response: { batchItemFailures: [] } });
    expect(fits.maxMemoryUsedMb).toBeLessThan(settings.memorySizeMb);
    expect(killed).toMatchObject({ ok: false, reason: 'out-of-memory', maxMemoryUsedMb: 128 });
    const rows = await db.sql`select source_event_id from ledger_entries where source_event_id like 'big-%'`;
    expect(rows.map((row) => row.source_event_id)).toEqual(['big-fits']);
  });
});
