import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { BREAKER_HOLD_TAG } from '../../lambda/breaker/mapping-control.ts';
import { createBreaker } from '../../lambda/breaker/run-breaker.ts';
import { type EventSourceMapping, startEventSourceMapping } from '../../tools/local/event-source-mapping.ts';
import { localLambdaControl } from '../../tools/local/local-lambda-control.ts';
import { breakerClose, breakerOpen, breakerStatus } from '../../tools/ops/breaker.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { runOpsCommand } from '../../tools/ops/run-ops-command.ts';
import { createQueues, fastClock, startOpsSqs } from './ops-fixture.ts';

const { sqs } = await startOpsSqs();
const running: EventSourceMapping[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((esm) => esm.stop()));
});

async function mapping() {
  const { queueUrl } = await createQueues(sqs, { maxReceiveCount: 5 });
  const esm = await startEventSourceMapping({
    sqs,
    queueUrl,
    handler: () => ({ batchItemFailures: [] }),
    maxConcurrency: 4,
    waitTimeSeconds: 0,
  });
  running.push(esm);
  return { esm, lambda: localLambdaControl(esm) };
}

const silent = { info() {}, warn() {}, error() {} };
const quiet = silent as never;
const noMetrics = { addMetric() {}, publishStoredMetrics() {} };

describe('Commands: sqs-worker breaker status|open|close', () => {
  it('holds the breaker open against a healthy database, then releases it and lets the breaker restore the scaling', async () => {
    // Prepare
    const { esm, lambda } = await mapping();
    const clock = fastClock(new Date('2026-12-01T12:00:00Z'));
    const out = createMemoryOutput({ json: true });
    const deps = { lambda: lambda.client, out, clock };
    const breaker = createBreaker({
      client: lambda.client,
      mappingUuid: lambda.uuid,
      probe: async () => {}, // the database answers
      probeTimeoutMs: 1000,
      scaling: { mode: 'maximum-concurrency', maxConcurrency: 4 },
      halfOpenConcurrency: 2,
      settings: {
        failureThreshold: 2,
        minOpenMs: 0,
        probeBackoffBaseMs: 1,
        probeBackoffMaxMs: 1,
        halfOpenMs: 0,
      },
      logger: quiet,
      metrics: noMetrics,
    });
    await breaker.tick();
    esm.setMaxConcurrency(2); // as if the breaker had been half-open when the operator stepped in

    // Act
    const before = await breakerStatus(deps, { mappingUuid: lambda.uuid });
    const opened = await breakerOpen(deps, {
      mappingUuid: lambda.uuid,
      operator: 'alice',
      reason: 'db upgrade',
    });
    const whileHeld = [await breaker.tick(), await breaker.tick()];
    const closed = await breakerClose(deps, { mappingUuid: lambda.uuid });
    const afterRelease = await breaker.tick();

    // Assess
    expect(before).toMatchObject({ state: 'Enabled', breaker: 'closed', hold: null });
    expect(opened).toMatchObject({
      state: 'Disabled',
      breaker: 'open (held)',
      hold: 'held by alice at 2026-12-01T12:00:00.000Z: db upgrade',
    });
    expect(whileHeld.map((tick) => [tick.state.status, tick.state.held, tick.probe])).toEqual([
      ['open', true, undefined],
      ['open', true, undefined],
    ]);
    expect(closed).toMatchObject({ state: 'Enabled', breaker: 'closed', hold: null });
    expect(lambda.tags[BREAKER_HOLD_TAG]).toBeUndefined();
    expect(afterRelease.step?.transition).toEqual({
      from: 'open',
      to: 'closed',
      reason: 'hold released by an operator',
    });
    expect(esm.enabled).toBe(true);
    expect(esm.maxConcurrency).toBe(4);
    const updates = lambda.calls
      .filter((c) => c.command === 'UpdateEventSourceMappingCommand')
      .map((c) => c.input);
    expect(updates).toEqual([
      { UUID: lambda.uuid, Enabled: false },
      { UUID: lambda.uuid, Enabled: true },
      { UUID: lambda.uuid, Enabled: true, ScalingConfig: { MaximumConcurrency: 4 } },
    ]);
  });

  it('keeps its state and tries again on the next tick when the Lambda control plane fails', async () => {
    // Prepare
    const { esm, lambda } = await mapping();
    const errors: string[] = [];
    const breaker = createBreaker({
      client: lambda.client,
      mappingUuid: lambda.uuid,
      probe: async () => {
        throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
      },
      probeTimeoutMs: 1000,
      scaling: { mode: 'maximum-concurrency', maxConcurrency: 4 },
      halfOpenConcurrency: 2,
      settings: {
        failureThreshold: 1,
        minOpenMs: 60_000,
        probeBackoffBaseMs: 1,
        probeBackoffMaxMs: 1,
        halfOpenMs: 0,
      },
      logger: {
        ...silent,
        error: (message: string, extra: { error: string }) => errors.push(`${message}: ${extra.error}`),
      } as never,
      metrics: noMetrics,
    });
    lambda.failNext('UpdateEventSourceMappingCommand', new Error('TooManyRequestsException: Rate exceeded'));

    // Act
    const failed = await breaker.tick();
    const retried = await breaker.tick();

    // Assess
    expect(failed.error).toBe('Error: TooManyRequestsException: Rate exceeded');
    expect(errors).toEqual(['breaker_tick_failed: Error: TooManyRequestsException: Rate exceeded']);
    expect(failed.state.status).toBe('closed');
    expect(retried.step?.transition?.to).toBe('open');
    expect(esm.enabled).toBe(false);
  });

  it('exits 2 naming the flag and the variable when no mapping UUID is given', async () => {
    // Prepare
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let noted = '';
    stderr.on('data', (chunk) => {
      noted += String(chunk);
    });

    // Act: the same wiring as bin/sqs-worker.ts's "breaker status"
    const exitCode = await runOpsCommand(
      'breaker status',
      {},
      async (session) =>
        breakerStatus(
          { lambda: session.lambda(), out: session.out, clock: session.clock },
          { mappingUuid: session.require('mappingUuid') },
        ),
      { env: {}, stdout, stderr },
    );

    // Assess
    expect(exitCode).toBe(2);
    expect(noted).toContain(
      'Missing setting for "breaker status": the UUID of the worker event source mapping (stack output EventSourceMappingUuid). Pass --mapping-uuid <value> or set WORKER_MAPPING_UUID.',
    );
  });
});
