import { afterEach, describe, expect, it } from 'vitest';
import { createFleetLimit } from '../../lambda/breaker/fleet-limit.ts';
import { BREAKER_HOLD_TAG, CONCURRENCY_PIN_TAG } from '../../lambda/breaker/mapping-control.ts';
import { createBreaker } from '../../lambda/breaker/run-breaker.ts';
import { type EventSourceMapping, startEventSourceMapping } from '../../tools/local/event-source-mapping.ts';
import { localLambdaControl } from '../../tools/local/local-lambda-control.ts';
import { scriptedCloudWatch } from '../support/scripted-cloudwatch-client.ts';
import { createQueues, startOpsSqs } from './ops-fixture.ts';

const { sqs } = await startOpsSqs();
const running: EventSourceMapping[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((esm) => esm.stop()));
});

const QUIET = { Completed: 400, Duplicate: 10, DbTransactionMs: 20 };
const START = Date.parse('2026-12-01T12:00:30Z');

/**
 * A local event source mapping behind the recorded Lambda client, its breaker with the control loop over a scripted
 * CloudWatch, on a hand-moved clock; the log lines and the published metrics captured.
 */
async function fleet(options: { ceiling?: number; floor?: number; probe?: () => Promise<unknown> } = {}) {
  const ceiling = options.ceiling ?? 20;
  const { queueUrl } = await createQueues(sqs, { maxReceiveCount: 5 });
  const esm = await startEventSourceMapping({
    sqs,
    queueUrl,
    handler: () => ({ batchItemFailures: [] }),
    maxConcurrency: ceiling,
    waitTimeSeconds: 0,
  });
  running.push(esm);
  const lambda = localLambdaControl(esm);
  const cloudWatch = scriptedCloudWatch();
  let now = START;
  const lines: { level: string; message: string; extra: Record<string, unknown> }[] = [];
  const line = (level: string) => (message: string, extra: Record<string, unknown>) => {
    lines.push({ level, message, extra });
  };
  const logger = { info: line('info'), warn: line('warn'), error: line('error') } as never;
  const published: { name: string; value: number }[] = [];
  const metrics = {
    addMetric: (name: string, _unit: 'Count', value: number) => {
      published.push({ name, value });
    },
    publishStoredMetrics() {},
  };
  const fleetLimit = createFleetLimit({
    cloudWatch: cloudWatch.client,
    lambda: lambda.client,
    mappingUuid: lambda.uuid,
    source: { namespace: 'SqsInboxWorker', service: 'case-worker' },
    limit: { floor: options.floor ?? 2, ceiling },
    windowSeconds: 60,
    logger,
    metrics,
  });
  const breaker = createBreaker({
    client: lambda.client,
    mappingUuid: lambda.uuid,
    probe: options.probe ?? (async () => {}),
    probeTimeoutMs: 1000,
    scaling: { mode: 'maximum-concurrency', maxConcurrency: ceiling },
    halfOpenConcurrency: 2,
    settings: {
      failureThreshold: 1,
      minOpenMs: 600_000,
      probeBackoffBaseMs: 1,
      probeBackoffMaxMs: 1,
      halfOpenMs: 0,
    },
    logger,
    metrics,
    now: () => now,
    fleetLimit,
  });
  /** One breaker tick a minute after the last. */
  const tick = async () => {
    now += 60_000;
    return breaker.tick();
  };
  const scalingUpdates = () =>
    lambda.calls
      .filter((call) => call.command === 'UpdateEventSourceMappingCommand' && call.input.ScalingConfig)
      .map((call) => call.input);
  const changes = () =>
    lines
      .filter((l) => l.message === 'concurrency_limit_changed')
      .map(({ extra: { from, to } }) => [from, to]);
  const limits = () => published.filter((p) => p.name === 'ConcurrencyLimit').map((p) => p.value);
  return {
    esm,
    lambda,
    cloudWatch,
    fleetLimit,
    tick,
    lines,
    scalingUpdates,
    changes,
    limits,
    now: () => now,
  };
}

describe('Control loop: the mapping’s MaximumConcurrency from the fleet’s signals of load (breaker tick)', () => {
  it('cuts the limit when the window shows contention, with one GetMetricData of the worker’s metrics', async () => {
    // Prepare
    const { esm, lambda, cloudWatch, tick, lines, scalingUpdates, limits } = await fleet({ ceiling: 20 });
    cloudWatch.script({ ...QUIET, Completed: 100, LoadContention: 30 });

    // Act
    const result = await tick();

    // Assess: the mapping dropped (MaximumConcurrency only, never Enabled)
    expect(result.concurrency).toMatchObject({ outcome: 'decided', limit: 15 });
    expect(scalingUpdates()).toEqual([{ UUID: lambda.uuid, ScalingConfig: { MaximumConcurrency: 15 } }]);
    expect(esm.maxConcurrency).toBe(15);
    expect(esm.enabled).toBe(true);
    const changed = lines.find((l) => l.message === 'concurrency_limit_changed');
    expect(changed?.level).toBe('warn');
    expect(changed?.extra).toMatchObject({ from: 20, to: 15 });
    expect(String(changed?.extra.reason)).toContain('contention 30');
    expect(limits()).toEqual([15]);
    // the request (at 12:01:30): the last whole minute ended a minute ago or more, the worker's namespace and dimension
    expect(cloudWatch.requests).toHaveLength(1);
    const [request] = cloudWatch.requests;
    expect(request?.StartTime).toEqual(new Date('2026-12-01T11:59:00Z'));
    expect(request?.EndTime).toEqual(new Date('2026-12-01T12:00:00Z'));
    const queries = (request?.MetricDataQueries ?? []).map((q) => [
      q.MetricStat?.Metric?.MetricName,
      q.MetricStat?.Stat,
      q.MetricStat?.Period,
    ]);
    expect(queries).toEqual([
      ['Completed', 'Sum', 60],
      ['Duplicate', 'Sum', 60],
      ['StaleVersionSkipped', 'Sum', 60],
      ['LoadContention', 'Sum', 60],
      ['LoadThrottle', 'Sum', 60],
      ['LoadUnavailable', 'Sum', 60],
      ['LoadSlow', 'Sum', 60],
      ['DbTransactionMs', 'p50', 60],
      ['LockWaits', 'Maximum', 60],
      ['Deadlocks', 'Sum', 60],
      ['LongTransactions', 'Maximum', 60],
    ]);
    for (const query of request?.MetricDataQueries ?? []) {
      expect(query.MetricStat?.Metric).toMatchObject({
        Namespace: 'SqsInboxWorker',
        Dimensions: [{ Name: 'service', Value: 'case-worker' }],
      });
    }
  });

  it('recovers one step per quiet window up to the ceiling, then holds there', async () => {
    // Prepare
    const { esm, cloudWatch, tick, scalingUpdates, changes, limits } = await fleet({ ceiling: 6 });
    esm.setMaxConcurrency(3); // where an earlier cut left it
    cloudWatch.script(QUIET);

    // Act
    for (let i = 0; i < 5; i += 1) await tick();

    // Assess
    expect(changes()).toEqual([
      [3, 4],
      [4, 5],
      [5, 6],
    ]);
    expect(scalingUpdates().map((u) => u.ScalingConfig)).toEqual([
      { MaximumConcurrency: 4 },
      { MaximumConcurrency: 5 },
      { MaximumConcurrency: 6 },
    ]);
    expect(esm.maxConcurrency).toBe(6);
    expect(limits()).toEqual([4, 5, 6, 6, 6]);
    expect(cloudWatch.requests).toHaveLength(5);
  });

  it('holds a rise while the health job shows lock waits, deadlocks or long transactions, and never cuts on them alone', async () => {
    // Prepare: where an earlier cut left it; the worker's records are quiet, the database is not
    const { esm, cloudWatch, tick, lines, changes } = await fleet({ ceiling: 6 });
    esm.setMaxConcurrency(3);
    cloudWatch.script(
      { ...QUIET, LockWaits: 4 },
      { ...QUIET, Deadlocks: 1 },
      { ...QUIET, LongTransactions: 2 },
      QUIET,
    );

    // Act
    const held = [await tick(), await tick(), await tick()];
    const risen = await tick();

    // Assess: three holds, each saying what the database showed; the quiet window raises
    expect(held.map((t) => [t.concurrency?.decision?.change, t.concurrency?.limit])).toEqual([
      ['hold', 3],
      ['hold', 3],
      ['hold', 3],
    ]);
    expect(held[0]?.concurrency?.decision?.reason).toContain(
      'the database shows 4 lock waits, 0 deadlocks, 0 long transactions',
    );
    expect(held[1]?.concurrency?.window?.database).toEqual({
      lockWaits: 0,
      deadlocks: 1,
      longTransactions: 0,
    });
    expect(risen.concurrency).toMatchObject({ outcome: 'decided', limit: 4 });
    expect(changes()).toEqual([[3, 4]]);
    expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
  });

  it('never goes below the floor', async () => {
    // Prepare
    const { esm, cloudWatch, tick, changes } = await fleet({ ceiling: 8, floor: 4 });
    cloudWatch.script({ Completed: 10, LoadThrottle: 10 });

    // Act
    for (let i = 0; i < 4; i += 1) await tick();

    // Assess
    expect(changes()).toEqual([
      [8, 6],
      [6, 4],
    ]);
    expect(esm.maxConcurrency).toBe(4);
  });

  it('moves nothing on business failures only (no database-bound record)', async () => {
    // Prepare
    const { esm, cloudWatch, tick, scalingUpdates } = await fleet({ ceiling: 10 });
    esm.setMaxConcurrency(5);
    cloudWatch.script({ RetryableFailure: 300, TerminalFailure: 40, Quarantined: 40, DbTransactionMs: 3 });

    // Act
    const results = [await tick(), await tick()];

    // Assess
    expect(results.map((r) => r.concurrency?.decision?.change)).toEqual(['hold', 'hold']);
    expect(results[0]?.concurrency?.decision?.reason).toBe('no database-bound record');
    expect(scalingUpdates()).toEqual([]);
    expect(esm.maxConcurrency).toBe(5);
  });

  it('decides each window once: ticks within one minute read no new metrics', async () => {
    // Prepare
    const { cloudWatch, fleetLimit, lambda, tick } = await fleet({ ceiling: 10 });
    cloudWatch.script(QUIET);
    await tick();

    // Act: the breaker ticks every 10 s
    const snapshot = { uuid: lambda.uuid, arn: lambda.arn, enabled: true, state: 'Enabled', lastModified: 0 };
    const mapping = { ...snapshot, maxConcurrency: 10, pollers: undefined, hold: undefined, pin: undefined };
    const again = await fleetLimit.tick(mapping, START + 60_000 + 10_000);

    // Assess
    expect(again.outcome).toBe('waiting');
    expect(cloudWatch.requests).toHaveLength(1);
  });

  it('leaves the mapping to the breaker while open: no metrics read, no scaling set', async () => {
    // Prepare: the database is down
    const { esm, cloudWatch, tick, scalingUpdates, limits } = await fleet({
      probe: async () => {
        throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
      },
    });
    cloudWatch.script({ ...QUIET, LoadUnavailable: 500 });

    // Act
    const results = [await tick(), await tick()];

    // Assess
    expect(results.map((r) => r.state.status)).toEqual(['open', 'open']);
    expect(results.every((r) => r.concurrency === undefined)).toBe(true);
    expect(esm.enabled).toBe(false);
    expect(cloudWatch.requests).toEqual([]);
    expect(scalingUpdates()).toEqual([]);
    expect(limits()).toEqual([]);
  });

  it('leaves a held mapping alone', async () => {
    // Prepare
    const { lambda, cloudWatch, tick, scalingUpdates } = await fleet();
    lambda.tags[BREAKER_HOLD_TAG] = 'held by alice at 2026-12-01T12:00:00.000Z';
    cloudWatch.script({ ...QUIET, LoadContention: 100 });

    // Act
    const results = [await tick(), await tick()];

    // Assess
    expect(results.map((r) => [r.state.status, r.state.held])).toEqual([
      ['open', true],
      ['open', true],
    ]);
    expect(cloudWatch.requests).toEqual([]);
    expect(scalingUpdates()).toEqual([]);
  });

  it('sets a pinned mapping to its pin and holds it there whatever the metrics say; unpinned, it moves again', async () => {
    // Prepare
    const { esm, lambda, cloudWatch, tick, changes, limits } = await fleet({ ceiling: 20 });
    lambda.tags[CONCURRENCY_PIN_TAG] = '7';
    cloudWatch.script({ ...QUIET, LoadContention: 300 });

    // Act
    const pinned = [await tick(), await tick(), await tick()];
    delete lambda.tags[CONCURRENCY_PIN_TAG];
    const released = await tick();

    // Assess
    expect(pinned.map((r) => r.concurrency?.outcome)).toEqual(['pinned', 'pinned', 'pinned']);
    expect(changes()).toEqual([
      [20, 7],
      [7, 5],
    ]);
    expect(limits()).toEqual([7, 7, 7, 5]);
    expect(cloudWatch.requests).toHaveLength(1); // only after the pin went
    expect(released.concurrency?.outcome).toBe('decided');
    expect(esm.maxConcurrency).toBe(5);
  });

  it('holds the limit on a pin tag that is not a MaximumConcurrency, and says why', async () => {
    // Prepare
    const { esm, lambda, cloudWatch, tick, lines, scalingUpdates } = await fleet({ ceiling: 20 });
    lambda.tags[CONCURRENCY_PIN_TAG] = 'lots';
    cloudWatch.script({ ...QUIET, LoadContention: 300 });

    // Act
    await tick();

    // Assess
    expect(scalingUpdates()).toEqual([]);
    expect(esm.maxConcurrency).toBe(20);
    expect(cloudWatch.requests).toEqual([]);
    expect(lines.find((l) => l.message === 'concurrency_pin_invalid')?.extra).toMatchObject({ pin: 'lots' });
  });

  it('logs a CloudWatch failure, keeps the mapping and the breaker closed, and reads the window next tick', async () => {
    // Prepare
    const { esm, cloudWatch, tick, lines } = await fleet({ ceiling: 20 });
    cloudWatch.script({ ...QUIET, LoadContention: 100 });
    cloudWatch.failNext(new Error('AccessDenied: not authorized to perform cloudwatch:GetMetricData'));

    // Act
    const failed = await tick();
    const retried = await tick();

    // Assess
    expect(failed.state.status).toBe('closed');
    expect(failed.concurrency).toMatchObject({ outcome: 'failed', limit: 20 });
    expect(lines.find((l) => l.message === 'concurrency_limit_failed')?.extra.error).toContain(
      'AccessDenied',
    );
    expect(retried.concurrency).toMatchObject({ outcome: 'decided', limit: 15 });
    expect(esm.maxConcurrency).toBe(15);
  });
});
