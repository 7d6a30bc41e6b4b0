import type { SQSClient } from '@aws-sdk/client-sqs';
import { GetQueueAttributesCommand, type Message, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { describeMissingAwsSetup } from '../../aws/describe-missing-aws-setup.ts';
import { ConfigError } from '../../errors.ts';
import type { CommitMode } from '../../types.ts';
import type { RecordOutcome } from '../../worker/outcome.ts';
import { POLLER_DEFAULTS, POLLER_LIMITS } from './constants.ts';
import type { DatabasePause, DatabasePauseSettings } from './database-pause.ts';
import { PollerLoop } from './poller-loop.ts';
import { describeError, type PollerLogger, type PollerMetrics } from './poller-telemetry.ts';
import type { ProcessBatch } from './process-batch.ts';
import type { VisibilityEntry } from './settle-messages.ts';

/** Settings and collaborators of {@link startPoller}. */
export interface PollerOptions {
  /** SQS client (AWS, or an emulator's). */
  readonly sqs: SQSClient;
  /** The queue URL exactly as CreateQueue/GetQueueUrl returned it. */
  readonly queueUrl: string;
  /** The engine: `createBatchEngine(options).processBatch`, whose `onOutcome` calls {@link Poller.recordSettled}. */
  readonly processBatch: ProcessBatch;
  /**
   * Records in flight at most, 1 to the database pool size (checked by the configuration): the ceiling of the
   * adaptive limit.
   */
  readonly concurrency: number;
  /**
   * The adaptive limit of records in flight (`lambda/concurrency/`): the records' signals of load (lock timeouts,
   * throttling, connection failures, slow transactions) lower it, windows without them raise it back, between
   * `floor` and `concurrency`. `enabled: false` keeps `concurrency`. @default { enabled: true, floor: 1 }
   */
  readonly adaptiveConcurrency?: {
    /** @default true */
    readonly enabled?: boolean;
    /** The lowest limit, 1 – `concurrency`. @default 1 */
    readonly floor?: number;
    /** The window of settled records of one decision. @default ADAPTIVE_WINDOW_MS (1000) */
    readonly windowMs?: number;
  };
  /** Messages per ReceiveMessage, 1–10. @default 10 */
  readonly batchSize?: number;
  /** Long-poll wait, 0–20 s. @default 20 */
  readonly waitSeconds?: number;
  /** The lease of a receive (VisibilityTimeout), renewed at half by the heartbeat. @default 30 */
  readonly visibilitySeconds?: number;
  /** The most the heartbeat extends one message in total, beyond its first lease. @default 3600 */
  readonly maxExtensionSeconds?: number;
  /**
   * The time a received batch gets, from its receive: what a Lambda invocation gets from its function timeout. The
   * engine starts no record and waits for no database call beyond it (nor beyond what the heartbeat can hold); a call
   * still waiting then is given up on (`DATABASE_TIMEOUT`), its connections discarded, its record handed back with
   * its backoff. @default 30
   */
  readonly batchTimeoutSeconds?: number;
  /**
   * The engine's commit mode. `per-message`: a record's outcome arrives after its commit, so settled records are
   * deleted or backed off at the next renewal of a batch still running; `per-batch`: only once the batch is done.
   * @default 'per-message'
   */
  readonly commitMode?: CommitMode;
  /** Database probe of the pause (`createDatabaseProbe`): resolves when the database answers. */
  readonly probe: () => Promise<unknown>;
  /** Pause timings. @default POLLER_DEFAULTS */
  readonly pause?: Partial<DatabasePauseSettings>;
  readonly logger: PollerLogger;
  readonly metrics: PollerMetrics;
  /** Failure injection for the local runtime and tests. */
  readonly hooks?: PollerHooks;
  /** Called for every event, after it is logged (tests assert on these instead of sleeping). */
  readonly onEvent?: (event: PollerEvent) => void;
  /** Clock (epoch ms). @default Date.now */
  readonly now?: () => number;
}

/** Failure injection, each hook optional. */
export interface PollerHooks {
  /**
   * Called for every committed record; `true` skips its delete, as a crash between the commit and
   * DeleteMessageBatch would: the message comes back after its lease and is a duplicate.
   */
  dropDeleteAfterSuccess?(record: SQSRecord): boolean;
}

/** What the poller did, as it happens. */
export type PollerEvent =
  | { readonly type: 'received'; readonly messageIds: readonly string[] }
  | {
      readonly type: 'released';
      readonly messageIds: readonly string[];
      readonly reason: 'paused' | 'stopping';
    }
  | { readonly type: 'extended'; readonly messageIds: readonly string[]; readonly visibilitySeconds: number }
  | {
      readonly type: 'settled';
      readonly deleted: readonly string[];
      readonly visibility: readonly VisibilityEntry[];
    }
  | { readonly type: 'pause'; readonly status: DatabasePause['status']; readonly reason: string }
  | { readonly type: 'limit'; readonly from: number; readonly to: number; readonly reason: string };

/** Counters of a running poller (a live view). */
export interface PollerStats {
  receives: number;
  receiveErrors: number;
  messagesReceived: number;
  batches: number;
  recordsAcknowledged: number;
  recordsReported: number;
  deleted: number;
  deleteFailures: number;
  deletesDropped: number;
  released: number;
  heartbeats: number;
  inFlight: number;
  maxInFlight: number;
  /**
   * The records allowed in flight now: the adaptive limit (`concurrency` when it is off). While the pause is
   * half-open the loop takes one record at a time whatever it says.
   */
  limit: number;
}

/** How {@link Poller.stop} ended. */
export interface PollerStopResult {
  /** Every record in flight settled within the timeout (false: the stop gave up; nothing more was settled). */
  readonly drained: boolean;
  readonly stats: PollerStats;
}

/** A running poller, returned by {@link startPoller}. */
export interface Poller {
  readonly queueArn: string;
  readonly fifo: boolean;
  readonly stats: Readonly<PollerStats>;
  /** The database pause: `closed` receiving, `open` paused, `half-open` one record at a time. */
  readonly status: DatabasePause['status'];
  /** The pause's probes so far. */
  readonly probes: number;
  /** The engine's `onOutcome`: the record settled, so its heartbeat stops at once. */
  recordSettled(outcome: RecordOutcome): void;
  /** Resolves when no record is in flight. */
  idle(): Promise<void>;
  /**
   * Stops receiving: a pending long poll is left to finish within `timeoutMs` (aborting it would not cancel
   * it in SQS, and what it took would stay invisible for a lease) and what it returns is handed back (visibility
   * 0); lets the records in flight settle for at most `timeoutMs` (records not yet started by the engine see the
   * stop in their budget and are handed back unstarted), and resolves. After a timeout nothing more
   * is deleted or changed: whatever did not settle comes back after its lease.
   */
  stop(options?: { timeoutMs?: number }): Promise<PollerStopResult>;
}

/** Checks the settings and lists every problem, naming the option and the range. */
function validate(options: PollerOptions): void {
  const problems: string[] = [];
  const check = (name: string, value: number | undefined, [min, max]: readonly [number, number]) => {
    if (value !== undefined && (!Number.isInteger(value) || value < min || value > max)) {
      problems.push(`${name} must be a whole number from ${min} to ${max} (given ${value})`);
    }
  };
  check('concurrency', options.concurrency, [1, 1000]);
  check('adaptiveConcurrency.floor', options.adaptiveConcurrency?.floor, [
    1,
    Math.max(1, options.concurrency),
  ]);
  check('adaptiveConcurrency.windowMs', options.adaptiveConcurrency?.windowMs, [1, 3_600_000]);
  check('batchSize', options.batchSize, POLLER_LIMITS.batchSize);
  check('waitSeconds', options.waitSeconds, POLLER_LIMITS.waitSeconds);
  check('visibilitySeconds', options.visibilitySeconds, POLLER_LIMITS.visibilitySeconds);
  check('maxExtensionSeconds', options.maxExtensionSeconds, POLLER_LIMITS.maxExtensionSeconds);
  check('batchTimeoutSeconds', options.batchTimeoutSeconds, POLLER_LIMITS.batchTimeoutSeconds);
  if (problems.length > 0) throw new ConfigError(`Invalid poller options:\n- ${problems.join('\n- ')}`);
}

/** Reads the queue's ARN and FIFO flag, naming the setting to fix when it cannot. */
async function readQueue(sqs: SQSClient, queueUrl: string): Promise<{ queueArn: string; fifo: boolean }> {
  const { Attributes = {} } = await sqs
    .send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn', 'FifoQueue'] }))
    .catch((error: unknown) => {
      // No region or no credentials: the variables to set, not a check of the queue.
      const setup = describeMissingAwsSetup(error, `The SQS client of queue ${queueUrl}`);
      if (setup) throw new ConfigError(setup);
      throw new ConfigError(
        `Cannot read the attributes of queue ${queueUrl} (${describeError(error)}); check WORKER_QUEUE_URL, the SQS endpoint (SQS_ENDPOINT in local runs) and that the task role may call sqs:GetQueueAttributes`,
      );
    });
  const queueArn = Attributes.QueueArn;
  if (!queueArn) {
    throw new ConfigError(
      `Queue ${queueUrl} reported no QueueArn; set WORKER_QUEUE_URL to the URL that CreateQueue/GetQueueUrl returned`,
    );
  }
  return { queueArn, fifo: Attributes.FifoQueue === 'true' };
}

/**
 * The long-running SQS poller (ECS/Fargate) over the runtime-neutral engine: what Lambda's event source mapping
 * does for the Lambda worker, done by the process itself.
 *
 * - **Receiving**: one long poll at a time (`waitSeconds`), for at most `min(batchSize, free slots)` messages, so
 *   no more than `concurrency` records are ever held; each received batch goes to `processBatch` at once.
 * - **Settling**: committed records are deleted with DeleteMessageBatch, reported ones get the engine's
 *   visibility (its backoff; 0 for a record not started) with one ChangeMessageVisibilityBatch. A FIFO queue
 *   holds back the rest of a message group while one of its messages is in flight, and the engine stops a group
 *   at its first failure, so groups stay in order.
 * - **Budget**: each batch gets `batchTimeoutSeconds` from its receive, as a Lambda invocation gets its timeout.
 * - **Heartbeat** (`lease-heartbeat.ts`): records still running at half their lease get a new one, up to
 *   `maxExtensionSeconds`; settled records are never extended.
 * - **Adaptive limit** (`lambda/concurrency/`): the records in flight follow an `AdaptiveLimit` between
 *   `adaptiveConcurrency.floor` and `concurrency`, cut on the database's signals of load and raised back by one per
 *   quiet window; records already in flight finish when it drops.
 * - **Pause** (`database-pause.ts`): after a batch with a connection-class failure, receiving stops (a pending
 *   long poll is aborted, anything received is handed back) until a probe of the database succeeds.
 * - **Stop**: see {@link Poller.stop}.
 *
 * @example
 * ```ts
 * let poller: Poller | undefined;
 * const engine = createBatchEngine({ ...workerOptions, onOutcome: (outcome) => poller?.recordSettled(outcome) });
 * poller = await startPoller({ sqs, queueUrl, processBatch: engine.processBatch, concurrency: 4, probe, logger, metrics });
 * process.once('SIGTERM', () => poller.stop({ timeoutMs: 30_000 }));
 * ```
 *
 * @internal — `startPollerFromConfig` is the public way to start one.
 */
export async function startPoller(options: PollerOptions): Promise<Poller> {
  validate(options);
  const { queueArn, fifo } = await readQueue(options.sqs, options.queueUrl);
  const waitSeconds = options.waitSeconds ?? POLLER_DEFAULTS.waitSeconds;
  const leaseSeconds = options.visibilitySeconds ?? POLLER_DEFAULTS.visibilitySeconds;
  const receive = async (max: number, signal: AbortSignal): Promise<Message[]> => {
    const { Messages = [] } = await options.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: options.queueUrl,
        MaxNumberOfMessages: max,
        WaitTimeSeconds: waitSeconds,
        VisibilityTimeout: leaseSeconds,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
      { abortSignal: signal },
    );
    return Messages;
  };
  const loop = new PollerLoop(options, {
    queueArn,
    fifo,
    awsRegion: queueArn.split(':')[3] ?? 'us-east-1',
    batchSize: options.batchSize ?? POLLER_DEFAULTS.batchSize,
    waitSeconds,
    leaseSeconds,
    batchTimeoutMs: 1000 * (options.batchTimeoutSeconds ?? POLLER_DEFAULTS.batchTimeoutSeconds),
    earlySettle: (options.commitMode ?? 'per-message') === 'per-message',
    now: options.now ?? Date.now,
    receive,
  });
  loop.start();
  return {
    queueArn,
    fifo,
    stats: loop.stats,
    get status() {
      return loop.pause.status;
    },
    get probes() {
      return loop.pause.probes;
    },
    recordSettled: (outcome) => loop.recordSettled(outcome),
    idle: () => loop.idle(),
    stop: ({ timeoutMs = POLLER_DEFAULTS.stopTimeoutSeconds * 1000 } = {}) => loop.stop(timeoutMs),
  };
}
