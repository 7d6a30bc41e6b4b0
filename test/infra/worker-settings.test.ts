import { App, Duration, Stack, Token } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import { describe, expect, it } from 'vitest';
import {
  resolveWorkerSettings as resolveWithReader,
  WorkerSettingsError,
} from '../../lib/resolve-worker-settings.ts';
import { SqsDatabaseWorker } from '../../lib/sqs-database-worker.ts';
import { SqsInboxWorkerStack } from '../../lib/sqs-inbox-worker-stack.ts';
import { stageSettings } from '../../lib/stage-settings.ts';
import { workerPropsFromSettings } from '../../lib/worker-axes.ts';
import type { WorkerSettings } from '../../lib/worker-settings.ts';

type Settings = Omit<WorkerSettings, 'vpc'>;

/** resolveWorkerSettings with `alarms: 'none'` unless `props` says otherwise: the rules under test are others. */
const resolveWorkerSettings = (props: Settings) => resolveWithReader({ alarms: 'none', ...props });

/** The problems `resolveWorkerSettings` reports for `props` (empty when valid). */
function problemsOf(props: Settings): readonly string[] {
  try {
    resolveWorkerSettings(props);
    return [];
  } catch (error) {
    if (error instanceof WorkerSettingsError) return error.problems;
    throw error;
  }
}

describe('Function: resolveWorkerSettings()', () => {
  it('derives maxConcurrency, reserved concurrency and the proxy share from the capacity formula', () => {
    // Prepare / Act
    const settings = resolveWorkerSettings({
      dbMaxConnections: 80,
      dbReservedConnections: 10,
      dbPoolSize: 2,
    });

    // Assess: (80 − 10) / 2 = 35 workers; proxy ⌈100 × (35 × 2 + 3) / 80⌉ = 92 % (relay, migration, breaker)
    expect(settings.maxConcurrency).toBe(35);
    expect(settings.reservedConcurrency).toBe(35);
    expect(settings.proxyMaxConnectionsPercent).toBe(92);
    expect(
      resolveWorkerSettings({ dbMaxConnections: 80, dbPoolSize: 2, breaker: false })
        .proxyMaxConnectionsPercent,
    ).toBe(90);
    expect(settings.capacity?.binding).toBe('db_connections');
    expect(settings.visibilityTimeout.toSeconds()).toBe(180);
    expect(settings.recordConcurrency).toBe(2);
  });

  it('names the binding constraint when another term is smaller', () => {
    const settings = resolveWorkerSettings({ dbMaxConnections: 500, lockContentionSafeParallelism: 12 });

    expect(settings.maxConcurrency).toBe(12);
    expect(settings.capacity?.explanation).toBe(
      'safe worker concurrency 12, bound by lock_contention (lock_contention_safe_parallelism 12)',
    );
  });

  it('accepts the defaults without a problem', () => {
    expect(problemsOf({})).toEqual([]);
  });

  it.each<[string, Settings, string]>([
    [
      'visibility timeout below 6 × timeout + window',
      { visibilityTimeout: Duration.seconds(30), timeout: Duration.seconds(30) },
      'visibilityTimeout (30 s) must be at least 6 × function timeout (30 s) + maxBatchingWindow (0 s) = 180 s; raise visibilityTimeout or lower the function timeout',
    ],
    [
      'a lock timeout above the statement timeout',
      { dbStatementTimeout: Duration.seconds(2), dbLockTimeout: Duration.seconds(3) },
      'dbLockTimeout (3000 ms) must not exceed dbStatementTimeout (2000 ms): a lock wait is part of a statement; lower dbLockTimeout',
    ],
    [
      'a statement timeout above 15 min',
      { dbStatementTimeout: Duration.minutes(20) },
      'dbStatementTimeout (1200000 ms) must be whole milliseconds from 1 ms to 900000 ms; set a value in that range',
    ],
    [
      'visibility timeout counting the batching window',
      {
        visibilityTimeout: Duration.seconds(60),
        timeout: Duration.seconds(10),
        maxBatchingWindow: Duration.seconds(5),
      },
      'visibilityTimeout (60 s) must be at least 6 × function timeout (10 s) + maxBatchingWindow (5 s) = 65 s; raise visibilityTimeout or lower the function timeout',
    ],
    [
      'maxConcurrency below 2',
      { maxConcurrency: 1 },
      'maxConcurrency (1) must be a whole number from 2 to 1000 (the SQS event source limits); set a value in that range',
    ],
    [
      'maxConcurrency above 1000',
      { maxConcurrency: 1001, dbMaxConnections: 5000 },
      'maxConcurrency (1001) must be a whole number from 2 to 1000 (the SQS event source limits); set a value in that range',
    ],
    [
      'maxConcurrency above reserved concurrency',
      { maxConcurrency: 20, reservedConcurrency: 10 },
      'maxConcurrency (20) must not exceed reservedConcurrency (10), or Lambda throttles the poller; raise reservedConcurrency to at least 20 or lower maxConcurrency',
    ],
    [
      'maxConcurrency above the capacity result',
      {
        maxConcurrency: 50,
        dbMaxConnections: 100,
        dbReservedConnections: 10,
        dbPoolSize: 2,
        recordConcurrency: 1,
      },
      'maxConcurrency (50) exceeds the safe worker concurrency: safe worker concurrency 45, bound by db_connections (db_available_connections 90 / connection_per_worker 2); lower maxConcurrency or raise the binding capacity input',
    ],
    [
      'capacity result below the event source minimum',
      { dbMaxConnections: 12, dbReservedConnections: 10, dbPoolSize: 2 },
      'the safe worker concurrency is 1 (safe worker concurrency 1, bound by db_connections (db_available_connections 2 / connection_per_worker 2)), below the event source minimum of 2; raise the binding capacity input or lower dbPoolSize',
    ],
    [
      'maxReceiveCount below 5',
      { maxReceiveCount: 3 },
      'maxReceiveCount (3) must be at least 5 so a transient failure or a backoff does not send a message to the DLQ; raise maxReceiveCount',
    ],
    [
      'DLQ retention not longer than source retention',
      { retentionPeriod: Duration.days(4), dlqRetentionPeriod: Duration.days(4) },
      'dlqRetentionPeriod (345600 s) must be longer than retentionPeriod (345600 s): a message keeps its original enqueue time in the DLQ and would expire there early; raise dlqRetentionPeriod or lower retentionPeriod',
    ],
    [
      'FIFO batch size above 10',
      { fifo: true, batchSize: 20 },
      'batchSize (20) must be at most 10 for a FIFO queue; lower batchSize to 10 or less',
    ],
    [
      'FIFO with a batching window',
      { fifo: true, maxBatchingWindow: Duration.seconds(5), visibilityTimeout: Duration.minutes(10) },
      'maxBatchingWindow (5 s) must be 0 s for a FIFO queue (Lambda does not batch FIFO records over time); remove maxBatchingWindow',
    ],
    [
      'batch size above 10 without a batching window',
      { batchSize: 100 },
      'maxBatchingWindow (0 s) must be at least 1 s when batchSize (100) is above 10; set maxBatchingWindow or lower batchSize to 10',
    ],
    [
      'record concurrency above the pool size',
      { recordConcurrency: 4, dbPoolSize: 2 },
      'recordConcurrency (4) must not exceed dbPoolSize (2): each record in flight holds one connection; raise dbPoolSize or lower recordConcurrency',
    ],
    [
      'reserved connections not below max connections',
      { dbMaxConnections: 50, dbReservedConnections: 50 },
      'dbReservedConnections (50) must be below dbMaxConnections (50); lower dbReservedConnections or raise dbMaxConnections',
    ],
    [
      'function timeout out of range',
      { timeout: Duration.minutes(20), visibilityTimeout: Duration.hours(3) },
      'timeout (1200 s) must be from 1 s to 900 s; set a value in that range',
    ],
    [
      'batch size out of range',
      { batchSize: 0 },
      'batchSize (0) must be a whole number from 1 to 10000; set a value in that range',
    ],
    [
      'message size out of range',
      { maxMessageSizeBytes: 512 },
      'maxMessageSizeBytes (512 bytes) must be a whole number from 1024 to 1048576 bytes; set a value in that range',
    ],
    [
      'relay run time not shorter than its schedule',
      { outboxRelaySchedule: Duration.minutes(1), outboxRelayMaxRun: Duration.seconds(60) },
      'outboxRelayMaxRun (60 s) must be at least 1 s and shorter than outboxRelaySchedule (60 s) so runs do not overlap; lower outboxRelayMaxRun',
    ],
    [
      'a batching window below one second',
      { maxBatchingWindow: Duration.millis(500) },
      'maxBatchingWindow must be whole seconds (given 500 ms); round it to whole seconds',
    ],
    [
      'a function timeout that is not whole seconds',
      { timeout: Duration.millis(1500) },
      'timeout must be whole seconds (given 1500 ms); round it to whole seconds',
    ],
    [
      'a visibility timeout that is not whole seconds',
      { visibilityTimeout: Duration.millis(200_500) },
      'visibilityTimeout must be whole seconds (given 200500 ms); round it to whole seconds',
    ],
    [
      'a relay schedule that is not whole seconds',
      { outboxRelaySchedule: Duration.millis(90_500) },
      'outboxRelaySchedule must be whole seconds (given 90500 ms); round it to whole seconds',
    ],
    [
      'maxReceiveCount 0',
      { maxReceiveCount: 0 },
      'maxReceiveCount (0) must be at least 5 so a transient failure or a backoff does not send a message to the DLQ; raise maxReceiveCount',
    ],
    [
      'maxReceiveCount above 1000',
      { maxReceiveCount: 1001 },
      'maxReceiveCount (1001) must be a whole number from 5 to 1000; set a value in that range',
    ],
    [
      'maxReceiveCount that is not a whole number',
      { maxReceiveCount: 5.5 },
      'maxReceiveCount (5.5) must be a whole number from 5 to 1000; set a value in that range',
    ],
    [
      'reservedConcurrency that is not a whole number',
      { reservedConcurrency: 40.5 },
      'reservedConcurrency (40.5) must be a whole number from 2 to 100000; set a value in that range',
    ],
    [
      'reservedConcurrency 0',
      { maxConcurrency: 2, reservedConcurrency: 0 },
      'reservedConcurrency (0) must be a whole number from 2 to 100000; set a value in that range',
    ],
    [
      'capacity inputs that go together',
      { dbWriteIopsBudget: 1000 },
      'Capacity inputs db_write_iops_budget and write_iops_per_message go together (given db_write_iops_budget=1000, write_iops_per_message=undefined); fix the capacity props',
    ],
  ])('reports %s with the value and the fix', (_rule, props, message) => {
    // Act
    const problems = problemsOf(props);

    // Assess
    expect(problems).toEqual([message]);
  });

  it('gives each function its own database user, named as PostgreSQL accepts it unquoted', () => {
    // Act
    const problems = problemsOf({ workerDbUser: 'Worker-1', relayDbUser: 'sqs_ops', opsDbUser: 'sqs_ops' });

    // Assess
    expect(problems).toEqual([
      'workerDbUser ("Worker-1") must be a lowercase SQL identifier (a–z, 0–9, _; at most 63 characters, not starting with a digit); rename it',
      'opsDbUser and relayDbUser are both "sqs_ops": each function needs its own database user so it gets only its own privileges; rename one',
    ]);
    expect(resolveWorkerSettings({}).dbUsers).toEqual({
      worker: 'sqs_worker',
      relay: 'sqs_outbox_relay',
      ops: 'sqs_worker_ops',
      health: 'sqs_worker_health',
      retention: 'sqs_worker_retention',
    });
  });

  it('collects every problem instead of stopping at the first', () => {
    const problems = problemsOf({ maxReceiveCount: 2, recordConcurrency: 3, batchSize: 0 });

    expect(problems).toHaveLength(3);
  });

  it('skips values that are unresolved tokens', () => {
    const problems = problemsOf({
      maxReceiveCount: Token.asNumber({ Ref: 'MaxReceiveCount' }),
      visibilityTimeout: Duration.seconds(Token.asNumber({ Ref: 'Visibility' })),
    });

    expect(problems).toEqual([]);
  });
});

describe('Function: resolveWorkerSettings() (scalingMode provisioned)', () => {
  it('derives the pollers and the reserved concurrency from the capacity formula', () => {
    // Prepare / Act: (400 − 10) / 1 = 390 safe → ⌊390 / 10⌋ = 39 pollers driving 390 invokes
    const settings = resolveWorkerSettings({ scalingMode: 'provisioned', dbMaxConnections: 400 });

    // Assess
    expect(settings.scalingMode).toBe('provisioned');
    expect(settings.provisionedPollers).toEqual({ minimumPollers: 2, maximumPollers: 39 });
    expect(settings.reservedConcurrency).toBe(390);
    expect(settings.maxConcurrency).toBe(390);
    expect(settings.proxyMaxConnectionsPercent).toBe(99);
  });

  it("keeps today's MaximumConcurrency scaling by default", () => {
    const settings = resolveWorkerSettings({ dbMaxConnections: 400 });

    expect(settings.scalingMode).toBe('maximum-concurrency');
    expect(settings.provisionedPollers).toBeUndefined();
    expect(settings.maxConcurrency).toBe(390);
  });

  it('rounds the pollers down so what they drive stays within the safe concurrency', () => {
    const settings = resolveWorkerSettings({
      scalingMode: 'provisioned',
      dbMaxConnections: 5000,
      dbReservedConnections: 10,
      dbPoolSize: 1,
    });

    // (5000 − 10) / 1 = 4990 safe → 499 pollers, reserved 4990
    expect(settings.provisionedPollers?.maximumPollers).toBe(499);
    expect(settings.reservedConcurrency).toBe(4990);
  });

  it.each<[string, Settings, string]>([
    [
      'a safe concurrency below what 2 pollers drive',
      { scalingMode: 'provisioned', dbMaxConnections: 80, lockContentionSafeParallelism: 15 },
      'scalingMode "provisioned" needs a safe worker concurrency of at least 20 (2 pollers, the minimum, × 10 concurrent invokes each), but the safe worker concurrency is 15 (safe worker concurrency 15, bound by lock_contention (lock_contention_safe_parallelism 15)); use scalingMode "maximum-concurrency" or raise the binding capacity input',
    ],
    [
      'maxConcurrency with provisioned pollers',
      { scalingMode: 'provisioned', maxConcurrency: 50, dbMaxConnections: 400 },
      'maxConcurrency (50) cannot be used with scalingMode "provisioned": the event source\'s MaximumConcurrency and ProvisionedPollerConfig are mutually exclusive; remove maxConcurrency (reservedConcurrency caps a provisioned worker) or set scalingMode "maximum-concurrency"',
    ],
    [
      'provisioned pollers without reserved concurrency, their only cap',
      { scalingMode: 'provisioned', dbMaxConnections: 400, reserveConcurrency: false },
      'scalingMode "provisioned" caps the database with the reserved concurrency, which reserveConcurrency: false removes; reserve concurrency or use scalingMode "maximum-concurrency"',
    ],
    [
      'pollers without provisioned mode',
      { minimumPollers: 4 },
      'minimumPollers (4) applies only to scalingMode "provisioned" (given scalingMode "maximum-concurrency"); remove minimumPollers or set scalingMode "provisioned"',
    ],
    [
      'minimumPollers above 200',
      { scalingMode: 'provisioned', minimumPollers: 201, maximumPollers: 300, dbMaxConnections: 5000 },
      'minimumPollers (201) must be a whole number from 2 to 200 (the SQS event source limits); set a value in that range',
    ],
    [
      'minimumPollers above maximumPollers',
      { scalingMode: 'provisioned', minimumPollers: 10, maximumPollers: 5, dbMaxConnections: 400 },
      'minimumPollers (10) must not exceed maximumPollers (5); lower minimumPollers or raise maximumPollers',
    ],
    [
      'maximumPollers driving more than the safe concurrency',
      { scalingMode: 'provisioned', maximumPollers: 10, dbMaxConnections: 80 },
      'maximumPollers (10) can drive 100 concurrent invokes, above the safe worker concurrency: safe worker concurrency 70, bound by db_connections (db_available_connections 70 / connection_per_worker 1); lower maximumPollers to 7 or less, or raise the binding capacity input',
    ],
    [
      'a reserved concurrency above the safe concurrency',
      { scalingMode: 'provisioned', reservedConcurrency: 80, dbMaxConnections: 80 },
      'reservedConcurrency (80) exceeds the safe worker concurrency: safe worker concurrency 70, bound by db_connections (db_available_connections 70 / connection_per_worker 1); with scalingMode "provisioned" the reserved concurrency is the only cap on the database, so lower reservedConcurrency or raise the binding capacity input',
    ],
    [
      'a reserved concurrency below what the pollers drive',
      { scalingMode: 'provisioned', reservedConcurrency: 30, dbMaxConnections: 80 },
      'reservedConcurrency (30) is below what maximumPollers (7) can drive (70 concurrent invokes), so Lambda would throttle the pollers and every throttled batch counts as a receive toward the DLQ; raise reservedConcurrency to 70 or lower maximumPollers to 3',
    ],
    [
      'an unknown scaling mode',
      { scalingMode: 'on-demand' as 'provisioned' },
      'scalingMode ("on-demand") must be "maximum-concurrency" or "provisioned"; set one of them',
    ],
  ])('refuses %s, naming the value and the fix', (_name, props, problem) => {
    expect(problemsOf(props)).toEqual([problem]);
  });

  it('reads the scaling mode and the pollers from stage settings', () => {
    const props = stageSettings('prod', { scalingMode: 'provisioned', minimumPollers: 3, maximumPollers: 8 });

    expect(props).toEqual({ scalingMode: 'provisioned', minimumPollers: 3, maximumPollers: 8 });
  });
});

describe('Function: resolveWorkerSettings() (breaker)', () => {
  it('applies the breaker defaults, or none when the breaker is off', () => {
    const on = resolveWorkerSettings({});
    const off = resolveWorkerSettings({ breaker: false });

    expect(on.breaker).toMatchObject({ failureThreshold: 2, halfOpenConcurrency: 2 });
    expect(on.breaker?.checkInterval.toSeconds()).toBe(10);
    expect(on.breaker?.minOpen.toSeconds()).toBe(60);
    expect(off.breaker).toBeUndefined();
  });

  it.each<[string, Settings, string]>([
    [
      'a check interval above 30 s',
      { breakerCheckInterval: Duration.seconds(45) },
      'breakerCheckInterval (45 s) must be from 1 s to 30 s; set a value in that range',
    ],
    [
      'a half-open concurrency above maxConcurrency',
      { maxConcurrency: 4, breakerHalfOpenConcurrency: 5 },
      'breakerHalfOpenConcurrency (5) must not exceed maxConcurrency (4): half-open runs the mapping below its configured scaling; lower breakerHalfOpenConcurrency',
    ],
    [
      'a failure threshold of 0',
      { breakerFailureThreshold: 0 },
      'breakerFailureThreshold (0) must be a whole number from 1 to 100; set a value in that range',
    ],
  ])('refuses %s, naming the value and the fix', (_name, props, problem) => {
    expect(problemsOf(props)).toEqual([problem]);
  });
});

describe('Function: resolveWorkerSettings() — adaptive concurrency', () => {
  it("resolves the floor of each runtime's limit by default, and none where no limit moves", () => {
    // Act
    const lambda = resolveWorkerSettings({});
    const fargate = resolveWorkerSettings({ runtime: 'fargate' });
    const floor = resolveWorkerSettings({ concurrencyFloor: 5 });
    const off = resolveWorkerSettings({ adaptiveConcurrency: false });
    const fargateOff = resolveWorkerSettings({ runtime: 'fargate', adaptiveConcurrency: false });
    const noBreaker = resolveWorkerSettings({ breaker: false });
    const provisioned = resolveWorkerSettings({ scalingMode: 'provisioned', dbMaxConnections: 400 });

    // Assess: AWS's minimum MaximumConcurrency on Lambda, one record on Fargate; off, the breaker stays
    expect(lambda.adaptiveConcurrency).toEqual({ floor: 2 });
    expect(fargate.adaptiveConcurrency).toEqual({ floor: 1 });
    expect(floor.adaptiveConcurrency).toEqual({ floor: 5 });
    expect(off.adaptiveConcurrency).toBeUndefined();
    expect(off.breaker).toBeDefined();
    expect(fargateOff.adaptiveConcurrency).toBeUndefined();
    expect(noBreaker.adaptiveConcurrency).toBeUndefined();
    expect(provisioned.adaptiveConcurrency).toBeUndefined();
  });

  it('accepts a floor equal to its ceiling: maxConcurrency on Lambda, recordConcurrency on Fargate', () => {
    expect(problemsOf({ maxConcurrency: 4, concurrencyFloor: 4 })).toEqual([]);
    expect(problemsOf({ runtime: 'fargate', recordConcurrency: 6, concurrencyFloor: 6 })).toEqual([]);
  });

  it.each<[string, Settings, readonly string[]]>([
    [
      'a Lambda floor above maxConcurrency',
      { maxConcurrency: 4, concurrencyFloor: 5 },
      [
        "concurrencyFloor (5) must not exceed maxConcurrency (4): the breaker's control loop moves the mapping's MaximumConcurrency between the two; lower concurrencyFloor or raise maxConcurrency",
      ],
    ],
    [
      'a Lambda floor above the maxConcurrency of the capacity formula',
      { dbMaxConnections: 80, concurrencyFloor: 71 },
      [
        "concurrencyFloor (71) must not exceed maxConcurrency (70, from the capacity formula): the breaker's control loop moves the mapping's MaximumConcurrency between the two; lower concurrencyFloor or raise the binding capacity input",
      ],
    ],
    [
      "a Lambda floor below AWS's minimum MaximumConcurrency",
      { concurrencyFloor: 1 },
      [
        'concurrencyFloor (1) must be a whole number from 2 to 1000 with runtime "lambda" (the SQS event source\'s MaximumConcurrency limits: AWS refuses less than 2); set a value in that range',
      ],
    ],
    [
      'a Lambda floor that is not a whole number',
      { concurrencyFloor: 2.5 },
      [
        'concurrencyFloor (2.5) must be a whole number from 2 to 1000 with runtime "lambda" (the SQS event source\'s MaximumConcurrency limits: AWS refuses less than 2); set a value in that range',
      ],
    ],
    [
      "a Fargate floor above the poller's concurrency",
      { runtime: 'fargate', recordConcurrency: 4, concurrencyFloor: 6 },
      [
        "concurrencyFloor (6) must not exceed the poller's concurrency (recordConcurrency 4, POLLER_CONCURRENCY): its adaptive limit moves the records in flight between the two; lower concurrencyFloor or raise recordConcurrency",
      ],
    ],
    [
      "a Fargate floor above the poller's default concurrency (dbPoolSize)",
      { runtime: 'fargate', concurrencyFloor: 11 },
      [
        "concurrencyFloor (11) must not exceed the poller's concurrency (recordConcurrency 10, its default, POLLER_CONCURRENCY): its adaptive limit moves the records in flight between the two; lower concurrencyFloor or raise recordConcurrency",
      ],
    ],
    [
      'a Fargate floor of 0',
      { runtime: 'fargate', concurrencyFloor: 0 },
      [
        'concurrencyFloor (0) must be a whole number of at least 1 with runtime "fargate" (POLLER_CONCURRENCY_FLOOR: the fewest records one task keeps in flight); set a value from 1 to recordConcurrency (10)',
      ],
    ],
    [
      'a floor with the loop turned off (Lambda)',
      { adaptiveConcurrency: false, concurrencyFloor: 3 },
      [
        'concurrencyFloor (3) is set while adaptiveConcurrency is false: no limit moves, so none has a floor; remove concurrencyFloor or remove adaptiveConcurrency: false',
      ],
    ],
    [
      'a floor with the loop turned off (Fargate)',
      { runtime: 'fargate', adaptiveConcurrency: false, concurrencyFloor: 3 },
      [
        'concurrencyFloor (3) is set while adaptiveConcurrency is false: no limit moves, so none has a floor; remove concurrencyFloor or remove adaptiveConcurrency: false',
      ],
    ],
    [
      'the loop and its floor asked for without the breaker',
      { breaker: false, adaptiveConcurrency: true, concurrencyFloor: 4 },
      [
        "adaptiveConcurrency (true) needs the breaker, whose control loop moves the event source mapping's MaximumConcurrency, and breaker is false; remove adaptiveConcurrency or remove breaker: false",
        "concurrencyFloor (4) needs the breaker, whose control loop moves the event source mapping's MaximumConcurrency, and breaker is false; remove concurrencyFloor or remove breaker: false",
      ],
    ],
    [
      'the loop asked for on a provisioned mapping',
      { scalingMode: 'provisioned', dbMaxConnections: 400, adaptiveConcurrency: true },
      [
        'adaptiveConcurrency (true) applies only to scalingMode "maximum-concurrency": the breaker\'s control loop moves the event source mapping\'s MaximumConcurrency, which a provisioned mapping does not have (given scalingMode "provisioned"); remove adaptiveConcurrency or set scalingMode "maximum-concurrency"',
      ],
    ],
    [
      'a floor on a provisioned mapping',
      { scalingMode: 'provisioned', dbMaxConnections: 400, concurrencyFloor: 4 },
      [
        'concurrencyFloor (4) applies only to scalingMode "maximum-concurrency": the breaker\'s control loop moves the event source mapping\'s MaximumConcurrency, which a provisioned mapping does not have (given scalingMode "provisioned"); remove concurrencyFloor or set scalingMode "maximum-concurrency"',
      ],
    ],
  ])('refuses %s, naming the value and the fix', (_name, props, problems) => {
    expect(problemsOf(props)).toEqual(problems);
  });

  it('skips the checks on a floor or a ceiling that is a deploy-time token', () => {
    // Act
    const tokenFloor = problemsOf({ maxConcurrency: 4, concurrencyFloor: Token.asNumber({ Ref: 'Floor' }) });
    const tokenCeiling = problemsOf({
      maxConcurrency: Token.asNumber({ Ref: 'Ceiling' }),
      concurrencyFloor: 5,
    });
    const tokenPoller = problemsOf({
      runtime: 'fargate',
      recordConcurrency: Token.asNumber({ Ref: 'Records' }),
      // The payload limit has no default with a token for the records in flight.
      maxPayloadBytes: 1024 * 1024,
      concurrencyFloor: 50,
    });

    // Assess
    expect(tokenFloor).toEqual([]);
    expect(tokenCeiling).toEqual([]);
    expect(tokenPoller).toEqual([]);
  });
});

describe('Class: SqsDatabaseWorker', () => {
  it('refuses unsafe props before creating any resource, listing every problem', () => {
    // Prepare
    const stack = new Stack(new App(), 'Unsafe');
    const vpc = new ec2.Vpc(stack, 'Vpc', { natGateways: 0 });
    const childrenBefore = stack.node.children.length;

    // Act
    const create = () =>
      new SqsDatabaseWorker(stack, 'Worker', {
        vpc,
        visibilityTimeout: Duration.seconds(30),
        maxReceiveCount: 3,
        alarms: 'none',
      });

    // Assess
    expect(create).toThrow(
      'SqsDatabaseWorker has 2 unsafe setting(s):\n' +
        '- visibilityTimeout (30 s) must be at least 6 × function timeout (30 s) + maxBatchingWindow (0 s) = 180 s; raise visibilityTimeout or lower the function timeout\n' +
        '- maxReceiveCount (3) must be at least 5 so a transient failure or a backoff does not send a message to the DLQ; raise maxReceiveCount',
    );
    expect(stack.node.children.length).toBe(childrenBefore);
  });
});

describe('Function: stageSettings()', () => {
  it('turns cdk.json stage settings into props', () => {
    const props = stageSettings('dev', { production: false, timeoutSeconds: 20, instanceType: 't4g.small' });

    expect(props.production).toBe(false);
    expect(props.timeout?.toSeconds()).toBe(20);
    expect(props.instanceType?.toString()).toBe('t4g.small');
  });

  it('reads adaptiveConcurrency (a boolean) and concurrencyFloor (a number), and refuses other types', () => {
    // Act
    const props = stageSettings('prod', { adaptiveConcurrency: false, concurrencyFloor: 4 });
    const mistyped = () => stageSettings('prod', { adaptiveConcurrency: 'off', concurrencyFloor: '4' });

    // Assess
    expect(props).toEqual({ adaptiveConcurrency: false, concurrencyFloor: 4 });
    expect(mistyped).toThrow(
      'Invalid stage settings:\n- stages.prod.adaptiveConcurrency must be a boolean (given "off")\n- stages.prod.concurrencyFloor must be a number (given "4")',
    );
  });

  it('rejects unknown keys and wrong types, naming them', () => {
    expect(() => stageSettings('dev', { timeoutSecs: 20, batchSize: '10' })).toThrow(
      'Invalid stage settings:\n- stages.dev.timeoutSecs is not a known setting; see the construct props table in docs/deploy.md\n- stages.dev.batchSize must be a number (given "10")',
    );
  });

  it('reads the recorded queue identity and the replacement acknowledgement', () => {
    const queueIdentity = {
      fifo: true,
      queueLogicalId: 'WorkerQueue1',
      deadLetterQueueLogicalId: 'WorkerDlq1',
    };

    const props = stageSettings('prod', { queueIdentity, acknowledgeQueueReplacement: true });

    expect(props.queueIdentity).toEqual(queueIdentity);
    expect(props.acknowledgeQueueReplacement).toBe(true);
  });

  it.each([
    ['a string', 'WorkerQueue9380F652'],
    ['fifo as a string', { fifo: 'false', queueLogicalId: 'Q', deadLetterQueueLogicalId: 'D' }],
    ['a missing DLQ id', { fifo: false, queueLogicalId: 'Q' }],
    ['an unknown key', { fifo: false, queueLogicalId: 'Q', deadLetterQueueLogicalId: 'D', queueName: 'q' }],
  ])('rejects a queue identity that is %s, echoing it', (_name, queueIdentity) => {
    expect(() => stageSettings('prod', { queueIdentity })).toThrow(
      `Invalid stage settings:\n- stages.prod.queueIdentity must be a JSON object {"fifo": boolean, "queueLogicalId": string, "deadLetterQueueLogicalId": string} (given ${JSON.stringify(queueIdentity)})`,
    );
  });

  it('rejects a stage that is not defined', () => {
    expect(() => stageSettings('qa', undefined)).toThrow(
      'Stage "qa" is not defined in cdk.json context "stages"; add it or pass -c stage=<name> of an existing one',
    );
  });
});

describe('Function: resolveWorkerSettings() — an alarm needs a reader', () => {
  it('refuses a worker whose alarms nobody reads, naming the three ways out', () => {
    // Act
    const create = () => resolveWithReader({});

    // Assess
    expect(create).toThrow(
      "nobody reads the alarms: set alarmEmail (an e-mail subscription to the alarm topic) or alarmTopic (an existing topic with subscribers; alarmTopicArn in cdk.json), or set alarms: 'none' to say on purpose that no one is notified (a dev stage)",
    );
  });

  it.each([
    ['an e-mail subscription', { alarmEmail: 'oncall@corp.internal' }],
    ["alarms: 'none' said on purpose", { alarms: 'none' as const }],
  ])('accepts %s', (_way, props) => {
    expect(() => resolveWithReader(props)).not.toThrow();
  });

  it("refuses alarms: 'none' next to an e-mail address, and any other value of alarms", () => {
    expect(() => resolveWithReader({ alarms: 'none', alarmEmail: 'oncall@corp.internal' })).toThrow(
      "alarms is 'none' but alarmEmail is set: someone does read the alarms; remove alarms: 'none'",
    );
    expect(() => resolveWithReader({ alarms: 'all' as 'none', alarmEmail: 'oncall@corp.internal' })).toThrow(
      `alarms ("all") must be 'none' or left out; to send alarms somewhere set alarmEmail or alarmTopic`,
    );
  });

  it('fails the synth of a stage from cdk.json settings that name no reader', () => {
    // Prepare
    const stack = new Stack(new App(), 'NoReader');
    const vpc = new ec2.Vpc(stack, 'Vpc', { natGateways: 0 });

    // Act
    const create = () =>
      new SqsDatabaseWorker(
        stack,
        'Worker',
        workerPropsFromSettings({ vpc, ...stageSettings('qa', { production: false }) }),
      );

    // Assess
    expect(create).toThrow(/SqsDatabaseWorker has 1 unsafe setting\(s\):\n- nobody reads the alarms/);
  });
});

describe('Function: resolveWorkerSettings() — the retention job', () => {
  it('defaults the inbox window to source + DLQ retention + 1 day', () => {
    const settings = resolveWorkerSettings({});

    expect(settings.retention?.inbox.toDays()).toBe(19);
    expect(settings.retention?.effectLog.toDays()).toBe(19);
    expect(settings.retention?.outbox.toDays()).toBe(7);
    expect(settings.retention?.quarantine.toDays()).toBe(30);
    expect(settings.retention?.schedule.toMinutes()).toBe(60);
  });

  it('refuses an inbox window shorter than source + DLQ retention, naming the values and the fix', () => {
    expect(problemsOf({ inboxRetention: Duration.days(7) })).toEqual([
      'inboxRetention (604800 s) must be at least retentionPeriod (345600 s) + dlqRetentionPeriod (1209600 s) = 1555200 s: a message redriven within that window would find no inbox row and run twice; raise inboxRetention',
      'effectLogRetention (604800 s) must be at least retentionPeriod (345600 s) + dlqRetentionPeriod (1209600 s) = 1555200 s: a message redriven within that window would find no inbox row and run twice; raise effectLogRetention',
    ]);
  });

  it('refuses a run as long as the schedule', () => {
    expect(
      problemsOf({ retentionSchedule: Duration.minutes(5), retentionMaxRun: Duration.minutes(5) }),
    ).toEqual([
      'retentionMaxRun (300 s) must be shorter than retentionSchedule (300 s) so runs do not overlap; lower retentionMaxRun',
    ]);
  });
});

describe('Function: resolveWorkerSettings() payload settings', () => {
  it('defaults the payload version retention to queue + DLQ retention in whole days', () => {
    const settings = resolveWorkerSettings({
      retentionPeriod: Duration.hours(36),
      dlqRetentionPeriod: Duration.days(14),
    });
    expect(settings.payloadVersionRetention.toDays()).toBe(16);
  });

  it('refuses a payload version retention shorter than queue + DLQ retention, naming the value to set', () => {
    expect(problemsOf({ payloadVersionRetention: Duration.days(17) })).toEqual([
      'payloadVersionRetention (17 days) must be at least retentionPeriod + dlqRetentionPeriod (345600 s + 1209600 s, 18 days rounded up): a message or its DLQ copy would outlive the payload version it refers to and fail PAYLOAD_NOT_FOUND; raise payloadVersionRetention to 18 days or more',
    ]);
    expect(problemsOf({ payloadVersionRetention: Duration.days(18) })).toEqual([]);
  });

  it('refuses a payload version retention that is not whole days', () => {
    expect(problemsOf({ payloadVersionRetention: Duration.hours(500) })).toEqual([
      'payloadVersionRetention (1800000 s) must be whole days (S3 lifecycle counts days); round it up',
    ]);
  });

  describe('the payloadRef limit (maxPayloadBytes) against the memory and the records in flight', () => {
    const MIB = 1024 * 1024;

    it('derives the default from memorySize and the records that hold a payload at once', () => {
      // (memorySize − 64 MiB for the worker) ÷ (11 per payload byte × records in flight), whole MiB, at most 64 MiB.
      expect(resolveWorkerSettings({}).maxPayloadBytes).toBe(40 * MIB);
      // recordConcurrency follows dbPoolSize: two payloads at once.
      expect(resolveWorkerSettings({ dbPoolSize: 2 }).maxPayloadBytes).toBe(20 * MIB);
      // Per batch, the batch's payloads are read before its transaction: batchSize 10 in flight.
      expect(resolveWorkerSettings({ commitMode: 'per-batch' }).maxPayloadBytes).toBe(4 * MIB);
      expect(resolveWorkerSettings({ memorySize: 1024 }).maxPayloadBytes).toBe(64 * MIB);
      // Below a MiB the bytes are kept exact: 448 MiB ÷ (11 × 1000).
      expect(
        resolveWorkerSettings({
          commitMode: 'per-batch',
          batchSize: 1000,
          maxBatchingWindow: Duration.seconds(1),
        }).maxPayloadBytes,
      ).toBe(Math.floor((448 * MIB) / 11_000));
    });

    it('refuses a maxPayloadBytes the memory cannot hold, naming the values and the fixes', () => {
      expect(problemsOf({ maxPayloadBytes: 64 * MIB })).toEqual([
        'maxPayloadBytes (67108864 bytes) is more than memorySize (512 MB) can hold: 1 record in flight (recordConcurrency 1) × 64 MiB × 11 (peak memory per byte of a JSON payload, measured: docs/performance.md) + 64 MiB (the worker) = 768 MiB; lower maxPayloadBytes to 42705640 bytes or less, raise memorySize to 768 MB, or lower recordConcurrency',
      ]);
      expect(problemsOf({ commitMode: 'per-batch', maxPayloadBytes: 8 * MIB })).toEqual([
        "maxPayloadBytes (8388608 bytes) is more than memorySize (512 MB) can hold: 10 records in flight (batchSize 10: commitMode per-batch reads a batch's payloads before its transaction and keeps them until it commits) × 8 MiB × 11 (peak memory per byte of a JSON payload, measured: docs/performance.md) + 64 MiB (the worker) = 944 MiB; lower maxPayloadBytes to 4270564 bytes or less, raise memorySize to 944 MB, or lower batchSize (or use commitMode per-message)",
      ]);
    });

    it('accepts a maxPayloadBytes up to what the memory holds', () => {
      expect(problemsOf({ maxPayloadBytes: 42_705_640 })).toEqual([]);
      expect(problemsOf({ maxPayloadBytes: 42_705_641 })).toHaveLength(1);
      expect(problemsOf({ memorySize: 2048, dbPoolSize: 2, maxPayloadBytes: 64 * MIB })).toEqual([]);
    });

    it('asks for maxPayloadBytes when the memory is a deploy-time token', () => {
      expect(problemsOf({ memorySize: Token.asNumber({ Ref: 'Memory' }) })).toEqual([
        'memorySize or the records in flight (recordConcurrency 1) is a deploy-time token, so maxPayloadBytes has no default; set maxPayloadBytes',
      ]);
      expect(problemsOf({ memorySize: Token.asNumber({ Ref: 'Memory' }), maxPayloadBytes: 8 * MIB })).toEqual(
        [],
      );
    });

    it('fails the synth of an unsafe limit and gives the worker the derived one', () => {
      const refused = new Stack(new App(), 'Refused');
      expect(
        () =>
          new SqsDatabaseWorker(refused, 'Worker', {
            vpc: new ec2.Vpc(refused, 'Vpc', { natGateways: 0 }),
            production: false,
            alarms: 'none',
            maxPayloadBytes: 64 * MIB,
          }),
      ).toThrow(/maxPayloadBytes \(67108864 bytes\) is more than memorySize \(512 MB\) can hold/);

      const derived = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Derived');
      new SqsDatabaseWorker(derived, 'Worker', {
        vpc: new ec2.Vpc(derived, 'Vpc', { natGateways: 0 }),
        production: false,
        alarms: 'none',
        store: { kind: 'postgres', dbPoolSize: 2 },
      });
      Template.fromStack(derived).hasResourceProperties('AWS::Lambda::Function', {
        Description: 'SQS → PostgreSQL inbox worker',
        Environment: { Variables: Match.objectLike({ PAYLOAD_MAX_BYTES: String(20 * MIB) }) },
      });
    });
  });

  it('fails the synth of a worker whose payload versions would expire before its messages', () => {
    const stack = new Stack(new App(), 'Short');
    expect(
      () =>
        new SqsDatabaseWorker(stack, 'Worker', {
          vpc: new ec2.Vpc(stack, 'Vpc'),
          production: false,
          payloadVersionRetention: Duration.days(1),
        }),
    ).toThrow(/payloadVersionRetention \(1 days\) must be at least retentionPeriod \+ dlqRetentionPeriod/);
  });
});

describe('Function: resolveWorkerSettings() — the commit mode', () => {
  it('refuses commitMode per-batch with store dynamodb, naming the value and the fix', () => {
    expect(problemsOf({ store: 'dynamodb', commitMode: 'per-batch' })).toEqual([
      'commitMode ("per-batch") is a PostgreSQL mode (one transaction per batch, a savepoint per record); with store "dynamodb" every record commits in its own TransactWriteItems: remove commitMode or set it "per-message"',
    ]);
    expect(problemsOf({ store: 'dynamodb', commitMode: 'per-message' })).toEqual([]);
  });

  it('fails the synth of a cdk.json stage with store dynamodb and commitMode per-batch', () => {
    // Prepare
    const props = stageSettings('dev', { store: 'dynamodb', commitMode: 'per-batch', alarms: 'none' });

    // Act
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const synth = () => new SqsInboxWorkerStack(app, 'PerBatchDynamo', { worker: props });

    // Assess: refused at synth, not at every cold start of the worker
    expect(synth).toThrow(/commitMode \("per-batch"\) is a PostgreSQL mode/);
  });
});

describe('Function: resolveWorkerSettings() — commitMode per-batch and record concurrency', () => {
  it('runs a function one record after another, and refuses more', () => {
    expect(resolveWorkerSettings({ commitMode: 'per-batch', dbPoolSize: 2 }).recordConcurrency).toBe(1);
    expect(problemsOf({ commitMode: 'per-batch', dbPoolSize: 2, recordConcurrency: 2 })).toEqual([
      "recordConcurrency (2) must be 1 with commitMode per-batch: an invocation's batch runs one record after another in its one transaction; remove recordConcurrency",
    ]);
  });

  it('lets a Fargate task run dbPoolSize whole batches at once, and refuses more records in flight', () => {
    expect(
      resolveWorkerSettings({ runtime: 'fargate', commitMode: 'per-batch', dbPoolSize: 4, batchSize: 5 })
        .recordConcurrency,
    ).toBe(20);
    expect(
      problemsOf({
        runtime: 'fargate',
        commitMode: 'per-batch',
        dbPoolSize: 4,
        batchSize: 5,
        recordConcurrency: 21,
      }),
    ).toEqual([
      'recordConcurrency (21) must not exceed dbPoolSize × batchSize (4 × 5 = 20) with commitMode per-batch: each batch in flight holds one connection; raise dbPoolSize or lower recordConcurrency',
    ]);
  });
});

describe('Function: resolveWorkerSettings() — workerEnvironment', () => {
  it('refuses each variable the construct sets from a prop, naming its value and the prop to set instead', () => {
    // Act
    const problems = problemsOf({
      workerEnvironment: {
        WORKER_COMMIT_MODE: 'per-batch',
        DB_POOL_SIZE: '50',
        DB_HOST: 'db.internal',
        WORKER_BACKOFF_MAX_SECONDS: '600',
      },
    });

    // Assess: one problem per derived variable; the variable the construct leaves to you passes.
    expect(problems).toEqual([
      'workerEnvironment sets WORKER_COMMIT_MODE ("per-batch"), which the construct sets from commitMode and checks at synth against the other settings; remove WORKER_COMMIT_MODE from workerEnvironment and set commitMode instead',
      'workerEnvironment sets DB_POOL_SIZE ("50"), which the construct sets from dbPoolSize and checks at synth against the other settings; remove DB_POOL_SIZE from workerEnvironment and set dbPoolSize instead',
      'workerEnvironment sets DB_HOST ("db.internal"), which the construct sets from store "postgres" (the stack\'s RDS Proxy) and checks at synth against the other settings; remove DB_HOST from workerEnvironment',
    ]);
  });

  it("refuses the poller's adaptive-concurrency variables, which come from adaptiveConcurrency and concurrencyFloor", () => {
    // Act
    const problems = problemsOf({
      runtime: 'fargate',
      workerEnvironment: { POLLER_ADAPTIVE_CONCURRENCY: 'off', POLLER_CONCURRENCY_FLOOR: '4' },
    });

    // Assess
    expect(problems).toEqual([
      'workerEnvironment sets POLLER_ADAPTIVE_CONCURRENCY ("off"), which the construct sets from adaptiveConcurrency and checks at synth against the other settings; remove POLLER_ADAPTIVE_CONCURRENCY from workerEnvironment and set adaptiveConcurrency instead',
      'workerEnvironment sets POLLER_CONCURRENCY_FLOOR ("4"), which the construct sets from concurrencyFloor and checks at synth against the other settings; remove POLLER_CONCURRENCY_FLOOR from workerEnvironment and set concurrencyFloor instead',
    ]);
  });

  it('lets it set the local endpoints and NODE_OPTIONS, which the construct declares for you to replace', () => {
    // Act
    const problems = problemsOf({
      workerEnvironment: {
        DATABASE_URL: 'postgres://worker@127.0.0.1:5432/worker',
        SQS_ENDPOINT: 'http://127.0.0.1:4566',
        S3_ENDPOINT: 'http://127.0.0.1:4566',
        NODE_OPTIONS: '--enable-source-maps --max-old-space-size=400',
      },
    });

    // Assess
    expect(problems).toEqual([]);
  });
});

describe('Function: resolveWorkerSettings() — DynamoDB record concurrency', () => {
  it('refuses more records at once than the worker runs (10), whatever the write budget allows', () => {
    // Act
    const problems = problemsOf({ store: 'dynamodb', recordConcurrency: 20, maxWriteUnitsPerSecond: 40_000 });

    // Assess: the worker's cold start refuses WORKER_RECORD_CONCURRENCY 20; the synth says so first.
    expect(problems).toEqual([
      'recordConcurrency (20) must be a whole number from 1 to 10 with store "dynamodb" (WORKER_RECORD_CONCURRENCY: the worker runs at most 10 records of a batch at once); lower recordConcurrency to 10 or less',
    ]);
    expect(problemsOf({ store: 'dynamodb', recordConcurrency: 10, maxWriteUnitsPerSecond: 40_000 })).toEqual(
      [],
    );
  });
});

describe('Function: resolveWorkerSettings() — provisioned pollers on DynamoDB', () => {
  it('names the write budget as the fix when the table cannot carry the minimum of pollers', () => {
    // Act: the default budget of 4000 write units a second carries 12 workers, below the 20 two pollers drive.
    const problems = problemsOf({ store: 'dynamodb', scalingMode: 'provisioned' });

    // Assess
    expect(problems).toEqual([
      'scalingMode "provisioned" needs a safe worker concurrency of at least 20 (2 pollers, the minimum, × 10 concurrent invokes each), but the safe worker concurrency is 12 (safe worker concurrency 12, bound by write_units (max_write_units_per_second 4000 / (write_units_per_message 5 × messages_per_second_per_worker 66.67))); use scalingMode "maximum-concurrency" or raise maxWriteUnitsPerSecond (the table serves more once scaled or with a raised quota), or lower transactItemsPerMessage or recordConcurrency',
    ]);
    expect(
      problemsOf({ store: 'dynamodb', scalingMode: 'provisioned', maxWriteUnitsPerSecond: 8000 }),
    ).toEqual([]);
  });
});
