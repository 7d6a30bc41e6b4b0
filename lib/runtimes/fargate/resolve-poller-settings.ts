import { Duration, Token } from 'aws-cdk-lib';
import {
  POLLER_LIMITS,
  SQS_MAX_VISIBILITY_SECONDS,
  VISIBILITY_LIMIT_MARGIN_SECONDS,
} from '../../../lambda/runtimes/poller/constants.ts';
import type { CapacityResult } from '../../stores/postgres/capacity.ts';
import type { WorkerSettings } from '../../worker-settings.ts';
import type { FargateRuntimeSettings, WorkerRuntime } from './fargate-settings.ts';

/** The Fargate runtime's settings after defaults and the capacity formula. */
export interface PollerSettings {
  /** `POLLER_WAIT_SECONDS`. */
  readonly waitTime: Duration;
  /** `POLLER_VISIBILITY_SECONDS`: the lease of one receive. */
  readonly visibility: Duration;
  /** `POLLER_STOP_TIMEOUT_SECONDS`: the drain on SIGTERM. */
  readonly stopTimeout: Duration;
  /** `POLLER_MAX_EXTENSION_SECONDS`: the most the heartbeat adds to a lease in total. */
  readonly maxExtension: Duration;
  /** The container's ECS `stopTimeout`: the drain plus {@link POLLER_STOP_MARGIN}. */
  readonly containerStopTimeout: Duration;
  readonly minTasks: number;
  readonly maxTasks: number;
  readonly taskCpu: number;
  readonly taskMemoryMiB: number;
}

/**
 * Time between the end of the poller's drain and SIGKILL: handing the unfinished records back (one
 * ChangeMessageVisibility batch), closing the pool and flushing the metrics.
 */
export const POLLER_STOP_MARGIN = Duration.seconds(10);
/**
 * Memory the X-Ray daemon beside a traced poller may use (its container's hard limit): its buffers (16 MiB,
 * `--buffer-memory`) and the process. It comes out of the task's memory, so the payload limit leaves it out.
 */
export const XRAY_DAEMON_MEMORY_MIB = 64;
/** Fargate's largest container `stopTimeout`. */
export const FARGATE_MAX_STOP_TIMEOUT = Duration.seconds(120);
/** The heartbeat at half the lease must come at least this long before the lease ends (the call's own time). */
const HEARTBEAT_MIN_MARGIN_S = 5;
/** SQS (the poller's own limits): 12 hours of visibility from the receive, 20 s long polls, 10 per receive. */
const SQS_MAX_VISIBILITY_S = SQS_MAX_VISIBILITY_SECONDS;
const SQS_MAX_WAIT_S = POLLER_LIMITS.waitSeconds[1];
const SQS_MAX_RECEIVE_BATCH = POLLER_LIMITS.batchSize[1];
/** The poller's heartbeat stops this far short of SQS's 12 hours: the most a lease and its extensions reach. */
const MAX_HELD_S = SQS_MAX_VISIBILITY_SECONDS - VISIBILITY_LIMIT_MARGIN_SECONDS;
/** A sanity bound only, like the reserved concurrency's: the account's Fargate quota is the real limit. */
const MAX_TASKS = 1000;
/** Connections one task holds by default: a whole receive batch in flight at once. */
export const FARGATE_DEFAULT_POOL_SIZE = 10;

/** Task memory (MiB) Fargate accepts for each CPU value: [min, max, step]. */
const FARGATE_MEMORY: Readonly<Record<number, readonly [number, number, number]>> = {
  256: [512, 2048, 512],
  512: [1024, 4096, 1024],
  1024: [2048, 8192, 1024],
  2048: [4096, 16_384, 1024],
  4096: [8192, 30_720, 1024],
  8192: [16_384, 61_440, 4096],
  16384: [32_768, 122_880, 8192],
};

/** Props that configure the worker function or its event source mapping: meaningless on Fargate. */
const LAMBDA_ONLY_PROPS = [
  'timeout',
  'memorySize',
  'maxBatchingWindow',
  'scalingMode',
  'maxConcurrency',
  'minimumPollers',
  'maximumPollers',
  'reservedConcurrency',
  'breaker',
  'breakerCheckInterval',
  'breakerFailureThreshold',
  'breakerMinOpen',
  'breakerHalfOpen',
  'breakerHalfOpenConcurrency',
] as const satisfies ReadonlyArray<keyof WorkerSettings>;

/** Props of the Fargate runtime only. */
const FARGATE_ONLY_PROPS = [
  'pollerWaitTime',
  'pollerVisibility',
  'pollerStopTimeout',
  'pollerMaxExtension',
  'minTasks',
  'maxTasks',
  'taskCpu',
  'taskMemoryMiB',
] as const satisfies ReadonlyArray<keyof FargateRuntimeSettings>;

type Props = Omit<WorkerSettings, 'vpc'>;

/**
 * Checks `runtime` and that no prop of the other runtime is set (it would be ignored silently otherwise).
 *
 * @returns the runtime, `lambda` when it is not one of the two.
 * @internal
 */
export function checkRuntime(props: Props, problems: string[]): WorkerRuntime {
  const runtime = props.runtime ?? 'lambda';
  if (runtime !== 'lambda' && runtime !== 'fargate') {
    problems.push(`runtime ("${String(runtime)}") must be "lambda" or "fargate"; set one of them`);
    return 'lambda';
  }
  const foreign = runtime === 'fargate' ? LAMBDA_ONLY_PROPS : FARGATE_ONLY_PROPS;
  const other = runtime === 'fargate' ? 'lambda' : 'fargate';
  for (const name of foreign) {
    if (props[name] === undefined) continue;
    // The breaker is on by default for Lambda; `breaker: false` says the same as the Fargate runtime does.
    if (name === 'breaker' && props.breaker === false) continue;
    problems.push(
      `${name} (${show(props[name])}) applies only to runtime "${other}" (given runtime "${runtime}"); remove ${name}${runtime === 'fargate' ? '' : ' or set runtime "fargate"'}`,
    );
  }
  return runtime;
}

/**
 * The Fargate runtime's timings, task size and bounds, checked against each other and against the queue:
 *
 * - `batchSize` 1–10 (one ReceiveMessage), `pollerWaitTime` 0–20 s;
 * - the lease (`pollerVisibility`) leaves the heartbeat at its half at least 5 s before it ends (≥ 10 s);
 * - `pollerMaxExtension` ≥ 1 s and lease + `pollerMaxExtension` ≤ 12 h less a minute: SQS refuses to keep a
 *   message invisible longer from its receive, and the poller's heartbeat stops a minute short of it;
 * - `visibilityTimeout` of the queue ≥ the lease: a receive that takes the queue's default (a poller that does
 *   not pass its lease, an operator's receive) must not give a record back before its first heartbeat;
 * - `pollerStopTimeout` ≤ half the lease: a record has at least half a lease left at any time (the heartbeat
 *   renews it at half), so every record the drain lets finish does so before SQS can hand it to another task,
 *   even once the heartbeat has stopped; and `pollerStopTimeout` + 10 s ≤ 120 s, Fargate's `stopTimeout` limit;
 * - `taskCpu`/`taskMemoryMiB` a combination Fargate accepts (the payload limit against the task memory: `resolve-payload-limit.ts`);
 * - `minTasks` ≤ `maxTasks` ≤ the safe worker concurrency (tasks × `dbPoolSize` connections fit the database, or
 *   with DynamoDB the tasks' writes fit the table's budget), and at least one task must fit.
 *
 * @internal
 */
export function resolvePollerSettings(
  props: Props,
  queueVisibility: Duration,
  capacity: CapacityResult | undefined,
  capacityTokens: boolean,
  problems: string[],
): PollerSettings {
  const whole = (name: string, value: Duration): number | undefined => {
    if (value.isUnresolved()) return undefined;
    const ms = value.toMilliseconds({ integral: false });
    if (Number.isInteger(ms / 1000)) return ms / 1000;
    problems.push(`${name} must be whole seconds (given ${ms} ms); round it to whole seconds`);
    return undefined;
  };
  const waitTime = props.pollerWaitTime ?? Duration.seconds(SQS_MAX_WAIT_S);
  const visibility = props.pollerVisibility ?? Duration.seconds(60);
  const stopTimeout = props.pollerStopTimeout ?? Duration.seconds(30);
  const maxExtension = props.pollerMaxExtension ?? Duration.minutes(15);
  const waitS = whole('pollerWaitTime', waitTime);
  const leaseS = whole('pollerVisibility', visibility);
  const stopS = whole('pollerStopTimeout', stopTimeout);
  const extensionS = whole('pollerMaxExtension', maxExtension);
  const queueS = whole('visibilityTimeout', queueVisibility);

  const batchSize = props.batchSize ?? SQS_MAX_RECEIVE_BATCH;
  if (!isToken(batchSize) && !(Number.isInteger(batchSize) && batchSize >= 1 && batchSize <= 10)) {
    problems.push(
      `batchSize (${batchSize}) must be a whole number from 1 to ${SQS_MAX_RECEIVE_BATCH} with runtime "fargate" (POLLER_BATCH_SIZE: one ReceiveMessage returns ${SQS_MAX_RECEIVE_BATCH} messages at most); lower batchSize`,
    );
  }
  if (waitS !== undefined && (waitS < 0 || waitS > SQS_MAX_WAIT_S)) {
    problems.push(
      `pollerWaitTime (${waitS} s) must be from 0 s to ${SQS_MAX_WAIT_S} s (the SQS long-polling maximum); set a value in that range`,
    );
  }
  checkLease({ leaseS, extensionS, queueS }, problems);
  checkStopTimeout(stopS, leaseS, problems);
  const taskCpu = props.taskCpu ?? 512;
  const taskMemoryMiB = props.taskMemoryMiB ?? 1024;
  checkTaskSize(taskCpu, taskMemoryMiB, problems);

  const { minTasks, maxTasks } = resolveTasks(props, capacity, capacityTokens, problems);
  return {
    waitTime,
    visibility,
    stopTimeout,
    maxExtension,
    containerStopTimeout: stopTimeout.plus(POLLER_STOP_MARGIN),
    minTasks,
    maxTasks,
    taskCpu,
    taskMemoryMiB,
  };
}

/**
 * The task bounds from the capacity formula: one task is one worker of the formula (it holds `dbPoolSize`
 * connections; with DynamoDB it writes for `recordConcurrency` records at once), so `maxTasks` defaults to the safe
 * worker concurrency and may not exceed it.
 */
function resolveTasks(
  props: Props,
  capacity: CapacityResult | undefined,
  capacityTokens: boolean,
  problems: string[],
): { minTasks: number; maxTasks: number } {
  // One task is one worker of the store's formula: dbPoolSize connections, or recordConcurrency records' writes.
  const dynamo = props.store === 'dynamodb';
  const inRange = (name: string, value: number | undefined, max: number): boolean => {
    if (value === undefined || isToken(value)) return true;
    if (Number.isInteger(value) && value >= 1 && value <= max) return true;
    problems.push(`${name} (${value}) must be a whole number from 1 to ${max}; set a value in that range`);
    return false;
  };
  const minOk = inRange('minTasks', props.minTasks, MAX_TASKS);
  const maxOk = inRange('maxTasks', props.maxTasks, MAX_TASKS);
  let maxTasks = props.maxTasks;
  if (maxTasks === undefined) {
    if (capacity) {
      maxTasks = Math.min(capacity.safeConcurrency, MAX_TASKS);
    } else {
      if (capacityTokens) {
        problems.push('a capacity input is a deploy-time token, so maxTasks has no default; set maxTasks');
      }
      maxTasks = 1;
    }
  } else if (maxOk && capacity && !isToken(maxTasks) && maxTasks > capacity.safeConcurrency) {
    problems.push(
      dynamo
        ? `maxTasks (${maxTasks}) tasks of recordConcurrency records each write more than the table's budget for the worker: ${capacity.explanation}; lower maxTasks to ${capacity.safeConcurrency} or less, or raise maxWriteUnitsPerSecond`
        : `maxTasks (${maxTasks}) × dbPoolSize connections exceeds what the database has for the worker: ${capacity.explanation}; lower maxTasks to ${capacity.safeConcurrency} or less, or raise the binding capacity input`,
    );
  }
  if (capacity && capacity.safeConcurrency < 1) {
    problems.push(
      dynamo
        ? `not even one Fargate task fits: the safe worker concurrency is ${capacity.safeConcurrency} (${capacity.explanation}), and one task runs recordConcurrency records at once; lower recordConcurrency or raise maxWriteUnitsPerSecond (or lower transactItemsPerMessage)`
        : `not even one Fargate task fits: the safe worker concurrency is ${capacity.safeConcurrency} (${capacity.explanation}), and one task holds dbPoolSize connections; lower dbPoolSize or raise the binding capacity input (dbMaxConnections, dbReservedConnections, …)`,
    );
    maxTasks = Math.max(1, maxTasks);
  }
  const minTasks = props.minTasks ?? 1;
  if (minOk && maxOk && !isToken(minTasks) && !isToken(maxTasks) && minTasks > maxTasks) {
    problems.push(
      `minTasks (${minTasks}) must not exceed maxTasks (${maxTasks}${props.maxTasks === undefined ? ', from the capacity formula' : ''}); lower minTasks${props.maxTasks === undefined ? ' or raise the binding capacity input' : ' or raise maxTasks'}`,
    );
  }
  return { minTasks, maxTasks };
}

const isToken = (value: number): boolean => Token.isUnresolved(value);

const show = (value: unknown): string =>
  value instanceof Duration
    ? value.toHumanString()
    : typeof value === 'string'
      ? `"${value}"`
      : String(value);

/** The lease against the heartbeat, SQS's 12 hours and the queue's own visibility timeout. */
function checkLease(
  values: { leaseS: number | undefined; extensionS: number | undefined; queueS: number | undefined },
  problems: string[],
): void {
  const { leaseS, extensionS, queueS } = values;
  const minLeaseS = 2 * HEARTBEAT_MIN_MARGIN_S;
  if (leaseS !== undefined && leaseS < minLeaseS) {
    problems.push(
      `pollerVisibility (${leaseS} s) is shorter than the heartbeat needs: the poller extends a running record's lease at half of it (${leaseS / 2} s in), which must come at least ${HEARTBEAT_MIN_MARGIN_S} s before the lease ends or SQS hands the record to another task first; raise pollerVisibility to ${minLeaseS} s or more`,
    );
  }
  if (leaseS !== undefined && leaseS > SQS_MAX_VISIBILITY_S) {
    problems.push(
      `pollerVisibility (${leaseS} s) must be at most ${SQS_MAX_VISIBILITY_S} s (12 h, the SQS maximum); lower pollerVisibility`,
    );
  }
  const minExtensionS = POLLER_LIMITS.maxExtensionSeconds[0];
  if (extensionS !== undefined && extensionS < minExtensionS) {
    problems.push(
      `pollerMaxExtension (${extensionS} s) must be at least ${minExtensionS} s (POLLER_MAX_EXTENSION_SECONDS: the poller refuses less); set it to ${minExtensionS} s or more`,
    );
  } else if (extensionS !== undefined && leaseS !== undefined && leaseS + extensionS > MAX_HELD_S) {
    problems.push(
      `pollerMaxExtension (${extensionS} s) + pollerVisibility (${leaseS} s) = ${leaseS + extensionS} s exceeds ${MAX_HELD_S} s: SQS keeps a message invisible for 12 h (${SQS_MAX_VISIBILITY_S} s) at most from its receive, and the poller's heartbeat stops ${VISIBILITY_LIMIT_MARGIN_SECONDS} s short of it; lower pollerMaxExtension to ${Math.max(minExtensionS, MAX_HELD_S - leaseS)} s or less`,
    );
  }
  if (queueS !== undefined && leaseS !== undefined && queueS < leaseS) {
    problems.push(
      `visibilityTimeout (${queueS} s) is shorter than pollerVisibility (${leaseS} s): a receive that takes the queue's default (an operator's, or a poller that does not pass its lease) would give a record back before its first heartbeat at ${leaseS / 2} s; raise visibilityTimeout to ${leaseS} s or leave it out (it defaults to pollerVisibility)`,
    );
  }
}

/** The drain against Fargate's stop timeout and half the lease. */
function checkStopTimeout(stopS: number | undefined, leaseS: number | undefined, problems: string[]): void {
  const marginS = POLLER_STOP_MARGIN.toSeconds();
  const maxStopS = FARGATE_MAX_STOP_TIMEOUT.toSeconds() - marginS;
  if (stopS !== undefined && stopS < 1) {
    problems.push(
      `pollerStopTimeout (${stopS} s) must be at least 1 s; set a value from 1 s to ${maxStopS} s`,
    );
  } else if (stopS !== undefined && stopS > maxStopS) {
    problems.push(
      `pollerStopTimeout (${stopS} s) + ${marginS} s to hand records back and close is ${stopS + marginS} s, above the ${FARGATE_MAX_STOP_TIMEOUT.toSeconds()} s Fargate allows a container to stop (ECS stopTimeout) before SIGKILL; lower pollerStopTimeout to ${maxStopS} s or less`,
    );
  }
  if (stopS !== undefined && leaseS !== undefined && stopS >= 1 && stopS > leaseS / 2) {
    problems.push(
      `pollerStopTimeout (${stopS} s) exceeds half of pollerVisibility (${leaseS} s): a running record has only half a lease left at worst (the heartbeat renews it at half), so a drain this long could still commit a record SQS has already handed to another task; lower pollerStopTimeout to ${Math.floor(leaseS / 2)} s or raise pollerVisibility to ${2 * stopS} s`,
    );
  }
}

/** A CPU and memory combination Fargate accepts. */
function checkTaskSize(taskCpu: number, taskMemoryMiB: number, problems: string[]): void {
  const memory = FARGATE_MEMORY[taskCpu];
  if (!isToken(taskCpu) && !memory) {
    problems.push(
      `taskCpu (${taskCpu}) must be one of ${Object.keys(FARGATE_MEMORY).join(', ')} (Fargate's CPU units); set one of them`,
    );
  } else if (memory && !isToken(taskMemoryMiB)) {
    const [min, max, step] = memory;
    if (
      !Number.isInteger(taskMemoryMiB) ||
      taskMemoryMiB < min ||
      taskMemoryMiB > max ||
      taskMemoryMiB % step
    ) {
      problems.push(
        `taskMemoryMiB (${taskMemoryMiB}) is not a memory Fargate allows with taskCpu ${taskCpu}: ${min} to ${max} MiB in steps of ${step}; set one of those or another taskCpu`,
      );
    }
  }
}
