import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createFleetLimit } from '../../lambda/breaker/fleet-limit.ts';
import { CONCURRENCY_PIN_TAG } from '../../lambda/breaker/mapping-control.ts';
import { createBreaker } from '../../lambda/breaker/run-breaker.ts';
import { type EventSourceMapping, startEventSourceMapping } from '../../tools/local/event-source-mapping.ts';
import { localLambdaControl } from '../../tools/local/local-lambda-control.ts';
import { concurrencyPin, concurrencyStatus, concurrencyUnpin } from '../../tools/ops/concurrency.ts';
import { createMemoryOutput } from '../../tools/ops/memory-output.ts';
import { runOpsCommand } from '../../tools/ops/run-ops-command.ts';
import { scriptedCloudWatch } from '../support/scripted-cloudwatch-client.ts';
import { createQueues, startOpsSqs } from './ops-fixture.ts';

const { sqs } = await startOpsSqs();
const running: EventSourceMapping[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((esm) => esm.stop()));
});

async function mapping(maxConcurrency = 12) {
  const { queueUrl } = await createQueues(sqs, { maxReceiveCount: 5 });
  const esm = await startEventSourceMapping({
    sqs,
    queueUrl,
    handler: () => ({ batchItemFailures: [] }),
    maxConcurrency,
    waitTimeSeconds: 0,
  });
  running.push(esm);
  return { esm, lambda: localLambdaControl(esm) };
}

const quiet = { info() {}, warn() {}, error() {} } as never;
const noMetrics = { addMetric() {}, publishStoredMetrics() {} };

describe('Commands: sqs-worker concurrency status|pin|unpin', () => {
  it('pins the MaximumConcurrency (tag and set), the breaker holds it there, and unpinning hands it back', async () => {
    // Prepare: a breaker with its control loop, the database under contention all along
    const { esm, lambda } = await mapping(12);
    const cloudWatch = scriptedCloudWatch();
    cloudWatch.script({ Completed: 100, LoadContention: 50 });
    let now = Date.parse('2026-12-01T12:00:30Z');
    const breaker = createBreaker({
      client: lambda.client,
      mappingUuid: lambda.uuid,
      probe: async () => {},
      probeTimeoutMs: 1000,
      scaling: { mode: 'maximum-concurrency', maxConcurrency: 12 },
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
      now: () => now,
      fleetLimit: createFleetLimit({
        cloudWatch: cloudWatch.client,
        lambda: lambda.client,
        mappingUuid: lambda.uuid,
        source: { namespace: 'SqsInboxWorker', service: 'case-worker' },
        limit: { floor: 2, ceiling: 12 },
        windowSeconds: 60,
        logger: quiet,
        metrics: noMetrics,
      }),
    });
    const tick = () => {
      now += 60_000;
      return breaker.tick();
    };
    const out = createMemoryOutput({ json: true });
    const deps = { lambda: lambda.client, out };
    const bounds = { mappingUuid: lambda.uuid, ceiling: 12 };

    // Act
    const before = await concurrencyStatus(deps, bounds);
    const pinned = await concurrencyPin(deps, { ...bounds, value: '8' });
    await tick();
    await tick();
    const whilePinned = await concurrencyStatus(deps, bounds);
    const unpinned = await concurrencyUnpin(deps, bounds);
    await tick();
    const after = await concurrencyStatus(deps, bounds);

    // Assess
    expect(before).toMatchObject({
      state: 'Enabled',
      maxConcurrency: 12,
      floor: 2,
      ceiling: 12,
      pinned: null,
      control: 'adaptive',
    });
    expect(pinned).toMatchObject({ maxConcurrency: 8, pinned: 8, control: 'pinned' });
    expect(whilePinned).toMatchObject({ maxConcurrency: 8, pinned: 8 });
    expect(cloudWatch.requests).toHaveLength(1); // the window after the unpin only
    expect(unpinned).toMatchObject({ maxConcurrency: 8, pinned: null, control: 'adaptive' });
    expect(after.maxConcurrency).toBe(6); // cut from 8 by the contention
    expect(lambda.tags[CONCURRENCY_PIN_TAG]).toBeUndefined();
    expect(esm.enabled).toBe(true);
    const calls = lambda.calls
      .filter((c) => ['TagResourceCommand', 'UpdateEventSourceMappingCommand'].includes(c.command))
      .map((c) => [c.command, c.input]);
    expect(calls.slice(0, 2)).toEqual([
      ['TagResourceCommand', { Resource: lambda.arn, Tags: { [CONCURRENCY_PIN_TAG]: '8' } }],
      ['UpdateEventSourceMappingCommand', { UUID: lambda.uuid, ScalingConfig: { MaximumConcurrency: 8 } }],
    ]);
    expect(out.lastJson()).toMatchObject({ maxConcurrency: 6, control: 'adaptive' });
    expect(out.stderr()).toContain(`Mapping ${lambda.uuid} pinned at MaximumConcurrency 8`);
  });

  it.each(['1', '1001', '2.5', 'ten'])(
    'refuses to pin %s, naming the value and the range, and changes nothing',
    async (value) => {
      // Prepare
      const { esm, lambda } = await mapping(12);
      const out = createMemoryOutput({ json: true });

      // Act
      const refused = concurrencyPin({ lambda: lambda.client, out }, { mappingUuid: lambda.uuid, value });

      // Assess
      await expect(refused).rejects.toThrow(
        `concurrency pin: "${value}" is not a MaximumConcurrency: give a whole number from 2 to 1000`,
      );
      await expect(refused).rejects.toMatchObject({ exitCode: 2 });
      expect(lambda.calls).toEqual([]);
      expect(esm.maxConcurrency).toBe(12);
    },
  );

  it('exits 2 naming the flag and the variable when no mapping UUID is given', async () => {
    // Prepare
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let noted = '';
    stderr.on('data', (chunk) => {
      noted += String(chunk);
    });

    // Act: the same wiring as bin/sqs-worker.ts's "concurrency status"
    const exitCode = await runOpsCommand(
      'concurrency status',
      {},
      async (session) =>
        concurrencyStatus(
          { lambda: session.lambda(), out: session.out },
          { mappingUuid: session.require('mappingUuid') },
        ),
      { env: {}, stdout, stderr },
    );

    // Assess
    expect(exitCode).toBe(2);
    expect(noted).toContain('Missing setting for "concurrency status"');
    expect(noted).toContain('--mapping-uuid <value> or set WORKER_MAPPING_UUID');
  });
});
