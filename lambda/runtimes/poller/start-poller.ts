import { setTimeout as sleep } from 'node:timers/promises';
import {
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { METRIC_NAMES } from '../../constants.ts';
import { ConfigError } from '../../errors.ts';
import { sqsEventRecord } from '../../sqs/sqs-event-record.ts';
import type { CommitMode } from '../../types.ts';
import type { RecordOutcome } from '../../worker/outcome.ts';
import { POLLER_DEFAULTS, POLLER_LIMITS } from './constants.ts';
import { createDatabasePause, type DatabasePause, type DatabasePauseSettings } from './database-pause.ts';
import { createLeaseHeartbeat, type HeldBatch } from './lease-heartbeat.ts';
import { describeError, type PollerLogger, type PollerMetrics } from './poller-telemetry.ts';
import type { BatchResult, ProcessBatch } from './process-batch.ts';
import { type DeleteEntry, settleMessages, type VisibilityEntry } from './settle-messages.ts';

/** Settings and collaborators of {@link startPoller}. */
export interface PollerOptions {
  /** SQS client (AWS, or an emulator's). */
  readonly sqs: SQSClient;
  /** The queue URL exactly as CreateQueue/GetQueueUrl returned it. */
  readonly queueUrl: string;
  /** The engine: `createBatchEngine(options).processBatch`, whose `onOutcome` calls {@link Poller.recordSettled}. */
  readonly processBatch: ProcessBatch;
  /** Records in flight at most, 1 to the database pool size (checked by the configuration). */
  readonly concurrency: number;
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
  | { readonly type: 'pause'; readonly status: DatabasePause['status']; readonly reason: string };

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

/** One received batch in flight. */
interface BatchInFlight {
  readonly records: readonly SQSRecord[];
  readonly byId: ReadonlyMap<string, SQSRecord>;
  /** Outcomes known so far (from `recordSettled`, then the batch result). */
  readonly settled: Map<string, RecordOutcome>;
  /** Records already deleted or handed back. */
  readonly done: Set<string>;
  hold?: HeldBatch;
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
  check('batchSize', options.batchSize, POLLER_LIMITS.batchSize);
  check('waitSeconds', options.waitSeconds, POLLER_LIMITS.waitSeconds);
  check('visibilitySeconds', options.visibilitySeconds, POLLER_LIMITS.visibilitySeconds);
  check('maxExtensionSeconds', options.maxExtensionSeconds, POLLER_LIMITS.maxExtensionSeconds);
  check('batchTimeoutSeconds', options.batchTimeoutSeconds, POLLER_LIMITS.batchTimeoutSeconds);
  if (problems.length > 0) throw new ConfigError(`Invalid poller options:\n- ${problems.join('\n- ')}`);
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
  const { sqs, queueUrl, logger, metrics } = options;
  const now = options.now ?? Date.now;
  const batchSize = options.batchSize ?? POLLER_DEFAULTS.batchSize;
  const waitSeconds = options.waitSeconds ?? POLLER_DEFAULTS.waitSeconds;
  const leaseSeconds = options.visibilitySeconds ?? POLLER_DEFAULTS.visibilitySeconds;
  const batchTimeoutMs = 1000 * (options.batchTimeoutSeconds ?? POLLER_DEFAULTS.batchTimeoutSeconds);
  const earlySettle = (options.commitMode ?? 'per-message') === 'per-message';
  const { Attributes = {} } = await sqs
    .send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn', 'FifoQueue'] }))
    .catch((error: unknown) => {
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
  const fifo = Attributes.FifoQueue === 'true';
  const awsRegion = queueArn.split(':')[3] ?? 'us-east-1';

  const stats: PollerStats = {
    receives: 0,
    receiveErrors: 0,
    messagesReceived: 0,
    batches: 0,
    recordsAcknowledged: 0,
    recordsReported: 0,
    deleted: 0,
    deleteFailures: 0,
    deletesDropped: 0,
    released: 0,
    heartbeats: 0,
    inFlight: 0,
    maxInFlight: 0,
  };
  const emit = (event: PollerEvent) => {
    try {
      options.onEvent?.(event);
    } catch (error) {
      logger.error('poller_listener_failed', { error: describeError(error) });
    }
  };
  let stopping = false;
  /** Set when a stop gave up waiting: nothing more is deleted or changed. */
  let abandoned = false;
  let stopDeadline = Number.POSITIVE_INFINITY;
  const stopped = new AbortController();
  let receiveAbort: AbortController | undefined;
  const capacityWaiters = new Set<() => void>();
  const idleWaiters = new Set<() => void>();
  const tasks = new Set<Promise<void>>();
  /** Batch in flight of each record in flight, by SQS messageId. */
  const byMessage = new Map<string, BatchInFlight>();

  const pause = createDatabasePause({
    probe: options.probe,
    settings: {
      probeBackoffBaseMs: options.pause?.probeBackoffBaseMs ?? POLLER_DEFAULTS.probeBackoffBaseMs,
      probeBackoffMaxMs: options.pause?.probeBackoffMaxMs ?? POLLER_DEFAULTS.probeBackoffMaxMs,
      halfOpenMs: options.pause?.halfOpenMs ?? POLLER_DEFAULTS.halfOpenMs,
      probeTimeoutMs: options.pause?.probeTimeoutMs ?? POLLER_DEFAULTS.probeTimeoutMs,
    },
    logger,
    metrics,
    now,
    onChange: (transition) => {
      // Paused: the pending long poll would take messages the poller cannot start.
      if (transition.to === 'open') receiveAbort?.abort();
      wakeCapacity();
      emit({ type: 'pause', status: transition.to, reason: transition.reason });
    },
  });
  const heartbeat = createLeaseHeartbeat({
    sqs,
    queueUrl,
    leaseSeconds,
    maxExtensionSeconds: options.maxExtensionSeconds ?? POLLER_DEFAULTS.maxExtensionSeconds,
    logger,
    metrics,
    now,
    onExtended: (messageIds, visibilitySeconds) => {
      stats.heartbeats += messageIds.length;
      emit({ type: 'extended', messageIds, visibilitySeconds });
    },
  });

  function wakeCapacity(): void {
    for (const resolve of [...capacityWaiters]) resolve();
  }
  const capacityFreed = () =>
    new Promise<void>((resolve) => {
      const done = () => {
        capacityWaiters.delete(done);
        resolve();
      };
      capacityWaiters.add(done);
    });

  /** Hands messages back unstarted: visibility 0, so another poller (or this one, later) takes them at once. */
  async function release(messages: readonly Message[], reason: 'paused' | 'stopping'): Promise<void> {
    const changes = messages.map((message) => ({
      messageId: message.MessageId as string,
      receiptHandle: message.ReceiptHandle as string,
      visibilitySeconds: 0,
    }));
    await settleMessages(sqs, queueUrl, { deletes: [], changes }, logger);
    stats.released += changes.length;
    logger.info('poller_released', { reason, messageIds: changes.map((change) => change.messageId) });
    metrics.addMetric(METRIC_NAMES.pollerReleased, 'Count', changes.length);
    metrics.publishStoredMetrics();
    emit({ type: 'released', messageIds: changes.map((change) => change.messageId), reason });
  }

  /** Deletes the batch's committed records and hands back its reported ones, once each. */
  async function settle(batch: BatchInFlight): Promise<void> {
    if (abandoned) return;
    const deletes: DeleteEntry[] = [];
    const changes: VisibilityEntry[] = [];
    for (const [messageId, outcome] of batch.settled) {
      const record = batch.byId.get(messageId);
      if (!record || batch.done.has(messageId)) continue;
      batch.done.add(messageId);
      if (outcome.acknowledged) {
        stats.recordsAcknowledged += 1;
        if (options.hooks?.dropDeleteAfterSuccess?.(record)) stats.deletesDropped += 1;
        else deletes.push({ messageId, receiptHandle: record.receiptHandle });
      } else {
        stats.recordsReported += 1;
        if (outcome.result === 'DEADLINE_DEFERRED') stats.released += 1; // not started: handed back at once
        // Without a visibility from the engine the record comes back when its lease ends.
        if (outcome.visibilitySeconds !== undefined) {
          changes.push({
            messageId,
            receiptHandle: record.receiptHandle,
            visibilitySeconds: outcome.visibilitySeconds,
          });
        }
      }
    }
    if (deletes.length + changes.length === 0) return;
    const result = await settleMessages(sqs, queueUrl, { deletes, changes }, logger);
    stats.deleted += result.deleted;
    stats.deleteFailures += result.deleteFailures;
    emit({ type: 'settled', deleted: deletes.map((entry) => entry.messageId), visibility: changes });
  }

  async function runBatch(batch: BatchInFlight, receivedAt: number): Promise<void> {
    // Settled records are settled with SQS at each renewal (per message: the outcome follows the commit), so a
    // record done early never waits out its lease for a slow sibling.
    const hold = heartbeat.hold(batch.records, receivedAt, earlySettle ? () => settle(batch) : undefined);
    batch.hold = hold;
    // The batch's budget, as a Lambda invocation's: its timeout from the receive, never beyond what the heartbeat
    // can hold nor, once stopping, beyond the stop timeout. The engine starts no record and waits for no database
    // call beyond it: a database that stops answering gives the record back within it, not after the hour the
    // heartbeat could hold it.
    const batchDeadline = receivedAt + batchTimeoutMs;
    const budget = {
      remainingMs: () => Math.min(hold.holdUntil, stopDeadline, batchDeadline) - now(),
    };
    let result: BatchResult | undefined;
    try {
      result = await options.processBatch(batch.records, budget);
    } catch (error) {
      // The engine never throws for a record: this is a defect. Nothing is settled; the leases run out.
      logger.error('poller_batch_failed', {
        messageIds: batch.records.map((record) => record.messageId),
        error: describeError(error),
      });
    }
    await hold.stop(); // after this no extension can land on a backoff
    if (result) {
      result.outcomes.forEach((outcome, index) => {
        const record = batch.records[index];
        if (record) batch.settled.set(record.messageId, outcome);
      });
      await settle(batch);
      pause.observe(result.databaseDown);
    }
  }

  function dispatch(messages: readonly Message[], receivedAt: number): void {
    const records = messages.map((message) =>
      sqsEventRecord(message, { eventSourceArn: queueArn as string, awsRegion }),
    );
    const batch: BatchInFlight = {
      records,
      byId: new Map(records.map((record) => [record.messageId, record])),
      settled: new Map(),
      done: new Set(),
    };
    for (const record of records) byMessage.set(record.messageId, batch);
    stats.batches += 1;
    stats.inFlight += records.length;
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
    const task: Promise<void> = runBatch(batch, receivedAt)
      .catch((error) => logger.error('poller_batch_failed', { error: describeError(error) }))
      .finally(() => {
        for (const record of records)
          if (byMessage.get(record.messageId) === batch) byMessage.delete(record.messageId);
        stats.inFlight -= records.length;
        tasks.delete(task);
        metrics.addMetric(METRIC_NAMES.pollerInFlight, 'Count', stats.inFlight);
        metrics.publishStoredMetrics();
        wakeCapacity();
        if (tasks.size === 0) for (const resolve of [...idleWaiters]) resolve();
      });
    tasks.add(task);
  }

  async function receive(max: number): Promise<Message[]> {
    receiveAbort = new AbortController();
    stats.receives += 1;
    try {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: max,
          WaitTimeSeconds: waitSeconds,
          VisibilityTimeout: leaseSeconds,
          MessageSystemAttributeNames: ['All'],
          MessageAttributeNames: ['All'],
        }),
        { abortSignal: receiveAbort.signal },
      );
      return Messages;
    } finally {
      receiveAbort = undefined;
    }
  }

  /** Read through a function: the status changes while the loop awaits. */
  const paused = () => pause.status === 'open';

  async function loop(): Promise<void> {
    let failures = 0;
    while (!stopping) {
      if (paused()) {
        await pause.whenReceiving(stopped.signal);
        continue;
      }
      const limit = pause.status === 'half-open' ? 1 : options.concurrency;
      const free = limit - stats.inFlight;
      if (free <= 0) {
        await capacityFreed();
        continue;
      }
      let messages: Message[];
      try {
        messages = await receive(Math.min(batchSize, free));
        failures = 0;
      } catch (error) {
        if (stopping || paused()) continue; // aborted on purpose
        stats.receiveErrors += 1;
        failures += 1;
        logger.warn('poller_receive_failed', { queueUrl, error: describeError(error) });
        await sleep(Math.min(5000, 100 * 2 ** failures), undefined, { signal: stopped.signal }).catch(
          () => {},
        );
        continue;
      }
      if (messages.length === 0) continue;
      const receivedAt = now();
      stats.messagesReceived += messages.length;
      emit({ type: 'received', messageIds: messages.map((message) => message.MessageId as string) });
      if (stopping || paused()) {
        await release(messages, stopping ? 'stopping' : 'paused');
        continue;
      }
      dispatch(messages, receivedAt);
    }
  }

  const polling = loop();
  logger.info('poller_started', {
    queueUrl,
    fifo,
    concurrency: options.concurrency,
    batchSize,
    waitSeconds,
    visibilitySeconds: leaseSeconds,
    batchTimeoutSeconds: batchTimeoutMs / 1000,
  });

  const idle = () =>
    tasks.size === 0
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          idleWaiters.add(resolve);
        });

  return {
    queueArn,
    fifo,
    stats,
    get status() {
      return pause.status;
    },
    get probes() {
      return pause.probes;
    },
    recordSettled(outcome) {
      const batch = byMessage.get(outcome.messageId);
      if (!batch) return;
      batch.settled.set(outcome.messageId, outcome);
      batch.hold?.settle(outcome.messageId);
    },
    idle,
    async stop({ timeoutMs = POLLER_DEFAULTS.stopTimeoutSeconds * 1000 } = {}) {
      if (!stopping) {
        stopping = true;
        stopDeadline = now() + timeoutMs;
        logger.info('poller_stopping', { inFlight: stats.inFlight, timeoutMs });
        stopped.abort();
        wakeCapacity();
      }
      // A pending long poll is left to finish (within `waitSeconds`) and what it returns is handed back at once:
      // aborting the request does not cancel it in SQS, which would still deliver to it, and whatever it took
      // would stay invisible for a whole lease. Only a long poll still pending at the stop timeout is aborted.
      const pollTimer = setTimeout(() => receiveAbort?.abort(), Math.max(0, stopDeadline - now()));
      await polling;
      clearTimeout(pollTimer);
      const left = Math.max(0, stopDeadline - now());
      let timer: NodeJS.Timeout | undefined;
      const drained = await Promise.race([
        idle().then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), left);
        }),
      ]);
      clearTimeout(timer);
      if (!drained) {
        abandoned = true;
        heartbeat.stopAll();
      }
      pause.close();
      (drained ? logger.info : logger.warn).call(
        logger,
        drained ? 'poller_stopped' : 'poller_stop_timed_out',
        {
          inFlight: stats.inFlight,
          received: stats.messagesReceived,
          deleted: stats.deleted,
          released: stats.released,
        },
      );
      return { drained, stats: { ...stats } };
    },
  };
}
