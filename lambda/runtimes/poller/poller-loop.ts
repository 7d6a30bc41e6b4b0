// Over 400 lines: the one class that owns the poller's state (receive loop, batches, stop and drain), kept whole so no state leaks.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Message } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { AdaptiveLimit, type LimitChange } from '../../concurrency/index.ts';
import { METRIC_NAMES } from '../../constants.ts';
import { sqsEventRecord } from '../../sqs/sqs-event-record.ts';
import type { RecordOutcome } from '../../worker/outcome.ts';
import { ADAPTIVE_WINDOW_MS, POLLER_DEFAULTS } from './constants.ts';
import { createDatabasePause, type DatabasePause } from './database-pause.ts';
import { createLeaseHeartbeat, type HeldBatch } from './lease-heartbeat.ts';
import { describeError } from './poller-telemetry.ts';
import type { BatchResult } from './process-batch.ts';
import { type DeleteEntry, settleMessages, type VisibilityEntry } from './settle-messages.ts';
import type { Poller, PollerEvent, PollerOptions, PollerStats, PollerStopResult } from './start-poller.ts';

/** One received batch in flight. */
interface BatchInFlight {
  readonly records: readonly SQSRecord[];
  readonly byId: ReadonlyMap<string, SQSRecord>;
  /** Outcomes known so far (from `recordSettled`, then the batch result). */
  readonly settled: Map<string, RecordOutcome>;
  /** Records already deleted or handed back. */
  readonly done: Set<string>;
  /** Records whose outcome the adaptive limit has counted. */
  readonly observed: Set<string>;
  hold?: HeldBatch;
}

/** The settings of one poller, defaults applied, and what `startPoller` read from the queue. @internal */
export interface LoopSettings {
  readonly queueArn: string;
  readonly fifo: boolean;
  readonly awsRegion: string;
  readonly batchSize: number;
  readonly waitSeconds: number;
  readonly leaseSeconds: number;
  readonly batchTimeoutMs: number;
  readonly earlySettle: boolean;
  readonly now: () => number;
  /** One long poll for at most `max` messages (ReceiveMessage, in `start-poller.ts`), aborted by `signal`. */
  readonly receive: (max: number, signal: AbortSignal) => Promise<Message[]>;
}

/**
 * The running poller, in the shape of bbc/sqs-consumer's `Consumer`: the mutable state of one poller (stop flags,
 * waiters, batches in flight) lives in private fields, and each concern of DESIGN.md's "Liveness" in its own
 * method, so the receive loop reads as the rules it follows.
 *
 * @internal — `startPoller` builds one and returns its {@link Poller} face.
 */
export class PollerLoop {
  readonly stats: PollerStats = {
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
    limit: 0,
  };
  readonly pause: DatabasePause;
  /** The adaptive limit of records in flight; undefined when it is off (the limit is `concurrency`). */
  readonly #adaptive: AdaptiveLimit | undefined;
  #stopping = false;
  /** Set when a stop gave up waiting: nothing more is deleted or changed. */
  #abandoned = false;
  #stopDeadline = Number.POSITIVE_INFINITY;
  readonly #stopped = new AbortController();
  #receiveAbort: AbortController | undefined;
  readonly #capacityWaiters = new Set<() => void>();
  readonly #idleWaiters = new Set<() => void>();
  readonly #tasks = new Set<Promise<void>>();
  /** Batch in flight of each record in flight, by SQS messageId. */
  readonly #byMessage = new Map<string, BatchInFlight>();
  readonly #heartbeat: ReturnType<typeof createLeaseHeartbeat>;
  #polling: Promise<void> = Promise.resolve();

  constructor(
    private readonly options: PollerOptions,
    private readonly settings: LoopSettings,
  ) {
    this.pause = this.#createPause();
    this.#heartbeat = this.#createHeartbeat();
    this.#adaptive = this.#createAdaptive();
    this.stats.limit = this.#adaptive?.limit ?? options.concurrency;
  }

  #createAdaptive(): AdaptiveLimit | undefined {
    const { concurrency, adaptiveConcurrency: adaptive = {} } = this.options;
    if (adaptive.enabled === false) return undefined;
    return new AdaptiveLimit(
      {
        floor: adaptive.floor ?? POLLER_DEFAULTS.concurrencyFloor,
        ceiling: concurrency,
        windowMs: adaptive.windowMs ?? ADAPTIVE_WINDOW_MS,
      },
      { now: this.settings.now, onChange: (change) => this.#limitChanged(change) },
    );
  }

  /** The adaptive limit moved: logged, metered, emitted; a higher one may let the loop receive again. */
  #limitChanged(change: LimitChange): void {
    const { logger, metrics } = this.options;
    this.stats.limit = change.to;
    const fields = { from: change.from, to: change.to, reason: change.reason };
    if (change.to < change.from) logger.warn('concurrency_limit_changed', fields);
    else logger.info('concurrency_limit_changed', fields);
    metrics.addMetric(METRIC_NAMES.concurrencyLimit, 'Count', change.to);
    metrics.publishStoredMetrics();
    this.#emit({ type: 'limit', ...fields });
    // A lower limit needs no wake: records in flight finish, and the loop receives once in-flight < limit.
    if (change.to > change.from) this.#wakeCapacity();
  }

  /** Counts a settled record's outcome in the adaptive limit, once per record. */
  #observe(batch: BatchInFlight, outcome: RecordOutcome): void {
    if (!this.#adaptive || batch.observed.has(outcome.messageId)) return;
    batch.observed.add(outcome.messageId);
    this.#adaptive.observe({
      result: outcome.result,
      ...(outcome.failureCode === undefined ? {} : { failureCode: outcome.failureCode }),
      dbTransactionMs: outcome.dbTransactionMs,
    });
  }

  #createPause(): DatabasePause {
    const { options } = this;
    return createDatabasePause({
      probe: options.probe,
      settings: {
        probeBackoffBaseMs: options.pause?.probeBackoffBaseMs ?? POLLER_DEFAULTS.probeBackoffBaseMs,
        probeBackoffMaxMs: options.pause?.probeBackoffMaxMs ?? POLLER_DEFAULTS.probeBackoffMaxMs,
        halfOpenMs: options.pause?.halfOpenMs ?? POLLER_DEFAULTS.halfOpenMs,
        probeTimeoutMs: options.pause?.probeTimeoutMs ?? POLLER_DEFAULTS.probeTimeoutMs,
      },
      logger: options.logger,
      metrics: options.metrics,
      now: this.settings.now,
      onChange: (transition) => {
        // Paused: the pending long poll would take messages the poller cannot start.
        if (transition.to === 'open') this.#receiveAbort?.abort();
        this.#wakeCapacity();
        this.#emit({ type: 'pause', status: transition.to, reason: transition.reason });
      },
    });
  }

  #createHeartbeat(): ReturnType<typeof createLeaseHeartbeat> {
    const { options } = this;
    return createLeaseHeartbeat({
      sqs: options.sqs,
      queueUrl: options.queueUrl,
      leaseSeconds: this.settings.leaseSeconds,
      maxExtensionSeconds: options.maxExtensionSeconds ?? POLLER_DEFAULTS.maxExtensionSeconds,
      logger: options.logger,
      metrics: options.metrics,
      now: this.settings.now,
      onExtended: (messageIds, visibilitySeconds) => {
        this.stats.heartbeats += messageIds.length;
        this.#emit({ type: 'extended', messageIds, visibilitySeconds });
      },
    });
  }

  /** Starts the receive loop and logs the settings. */
  start(): void {
    const { options, settings } = this;
    this.#polling = this.#loop();
    options.logger.info('poller_started', {
      queueUrl: options.queueUrl,
      fifo: settings.fifo,
      concurrency: options.concurrency,
      adaptiveConcurrency: this.#adaptive ? 'on' : 'off',
      ...(this.#adaptive
        ? {
            concurrencyFloor: options.adaptiveConcurrency?.floor ?? POLLER_DEFAULTS.concurrencyFloor,
            concurrencyWindowMs: options.adaptiveConcurrency?.windowMs ?? ADAPTIVE_WINDOW_MS,
          }
        : {}),
      batchSize: settings.batchSize,
      waitSeconds: settings.waitSeconds,
      visibilitySeconds: settings.leaseSeconds,
      batchTimeoutSeconds: settings.batchTimeoutMs / 1000,
    });
  }

  #emit(event: PollerEvent): void {
    try {
      this.options.onEvent?.(event);
    } catch (error) {
      this.options.logger.error('poller_listener_failed', { error: describeError(error) });
    }
  }

  #wakeCapacity(): void {
    for (const resolve of [...this.#capacityWaiters]) resolve();
  }

  #capacityFreed(): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        this.#capacityWaiters.delete(done);
        resolve();
      };
      this.#capacityWaiters.add(done);
    });
  }

  /** Read through a method: the status changes while the loop awaits. */
  #paused(): boolean {
    return this.pause.status === 'open';
  }

  async #loop(): Promise<void> {
    let failures = 0;
    while (!this.#stopping) {
      if (this.#paused()) {
        await this.pause.whenReceiving(this.#stopped.signal);
        continue;
      }
      // Half-open: one record at a time; else the adaptive limit, never above POLLER_CONCURRENCY.
      const limit =
        this.pause.status === 'half-open'
          ? 1
          : Math.min(this.options.concurrency, this.#adaptive?.limit ?? this.options.concurrency);
      const free = limit - this.stats.inFlight;
      if (free <= 0) {
        await this.#capacityFreed();
        continue;
      }
      let messages: Message[];
      try {
        messages = await this.#receive(Math.min(this.settings.batchSize, free));
        failures = 0;
      } catch (error) {
        if (this.#stopping || this.#paused()) continue; // aborted on purpose
        failures += 1;
        await this.#receiveFailed(error, failures);
        continue;
      }
      if (messages.length > 0) await this.#received(messages);
    }
  }

  async #receive(max: number): Promise<Message[]> {
    this.#receiveAbort = new AbortController();
    this.stats.receives += 1;
    try {
      return await this.settings.receive(max, this.#receiveAbort.signal);
    } finally {
      this.#receiveAbort = undefined;
    }
  }

  /** Counts and logs a failed receive, then backs off (cut short by a stop). */
  async #receiveFailed(error: unknown, failures: number): Promise<void> {
    this.stats.receiveErrors += 1;
    this.options.logger.warn('poller_receive_failed', {
      queueUrl: this.options.queueUrl,
      error: describeError(error),
    });
    await sleep(Math.min(5000, 100 * 2 ** failures), undefined, { signal: this.#stopped.signal }).catch(
      () => {},
    );
  }

  /** A receive returned messages: dispatched, or handed back if the poller paused or is stopping meanwhile. */
  async #received(messages: Message[]): Promise<void> {
    const receivedAt = this.settings.now();
    this.stats.messagesReceived += messages.length;
    this.#emit({ type: 'received', messageIds: messages.map((message) => message.MessageId as string) });
    if (this.#stopping || this.#paused()) {
      await this.#release(messages, this.#stopping ? 'stopping' : 'paused');
      return;
    }
    this.#dispatch(messages, receivedAt);
  }

  /** Hands messages back unstarted: visibility 0, so another poller (or this one, later) takes them at once. */
  async #release(messages: readonly Message[], reason: 'paused' | 'stopping'): Promise<void> {
    const { sqs, queueUrl, logger, metrics } = this.options;
    const changes = messages.map((message) => ({
      messageId: message.MessageId as string,
      receiptHandle: message.ReceiptHandle as string,
      visibilitySeconds: 0,
    }));
    await settleMessages(sqs, queueUrl, { deletes: [], changes }, logger);
    this.stats.released += changes.length;
    logger.info('poller_released', { reason, messageIds: changes.map((change) => change.messageId) });
    metrics.addMetric(METRIC_NAMES.pollerReleased, 'Count', changes.length);
    metrics.publishStoredMetrics();
    this.#emit({ type: 'released', messageIds: changes.map((change) => change.messageId), reason });
  }

  #dispatch(messages: readonly Message[], receivedAt: number): void {
    const { queueArn, awsRegion } = this.settings;
    const records = messages.map((message) =>
      sqsEventRecord(message, { eventSourceArn: queueArn, awsRegion }),
    );
    const batch: BatchInFlight = {
      records,
      byId: new Map(records.map((record) => [record.messageId, record])),
      settled: new Map(),
      done: new Set(),
      observed: new Set(),
    };
    for (const record of records) this.#byMessage.set(record.messageId, batch);
    const { stats } = this;
    stats.batches += 1;
    stats.inFlight += records.length;
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
    this.#adaptive?.noteInFlight(stats.inFlight);
    const task: Promise<void> = this.#runBatch(batch, receivedAt)
      .catch((error) => this.options.logger.error('poller_batch_failed', { error: describeError(error) }))
      .finally(() => this.#batchDone(batch, task));
    this.#tasks.add(task);
  }

  /** A batch's task ended: its slots are free, and the poller may be idle. */
  #batchDone(batch: BatchInFlight, task: Promise<void>): void {
    for (const record of batch.records)
      if (this.#byMessage.get(record.messageId) === batch) this.#byMessage.delete(record.messageId);
    this.stats.inFlight -= batch.records.length;
    // The limit's next window starts from the records in flight now, not from the last dispatch's count.
    this.#adaptive?.noteInFlight(this.stats.inFlight);
    this.#tasks.delete(task);
    this.options.metrics.addMetric(METRIC_NAMES.pollerInFlight, 'Count', this.stats.inFlight);
    this.options.metrics.publishStoredMetrics();
    this.#wakeCapacity();
    if (this.#tasks.size === 0) for (const resolve of [...this.#idleWaiters]) resolve();
  }

  async #runBatch(batch: BatchInFlight, receivedAt: number): Promise<void> {
    const { now, earlySettle, batchTimeoutMs } = this.settings;
    // Settled records are settled with SQS at each renewal (per message: the outcome follows the commit), so a
    // record done early never waits out its lease for a slow sibling.
    const hold = this.#heartbeat.hold(
      batch.records,
      receivedAt,
      earlySettle ? () => this.#settle(batch) : undefined,
    );
    batch.hold = hold;
    // The batch's budget, as a Lambda invocation's: its timeout from the receive, never beyond what the heartbeat
    // can hold nor, once stopping, beyond the stop timeout. The engine starts no record and waits for no database
    // call beyond it: a database that stops answering gives the record back within it, not after the hour the
    // heartbeat could hold it.
    const batchDeadline = receivedAt + batchTimeoutMs;
    const budget = {
      remainingMs: () => Math.min(hold.holdUntil, this.#stopDeadline, batchDeadline) - now(),
    };
    let result: BatchResult | undefined;
    try {
      result = await this.options.processBatch(batch.records, budget);
    } catch (error) {
      // The engine never throws for a record: this is a defect. Nothing is settled; the leases run out.
      this.options.logger.error('poller_batch_failed', {
        messageIds: batch.records.map((record) => record.messageId),
        error: describeError(error),
      });
    }
    await hold.stop(); // after this no extension can land on a backoff
    if (result) {
      result.outcomes.forEach((outcome, index) => {
        const record = batch.records[index];
        if (record) batch.settled.set(record.messageId, outcome);
        this.#observe(batch, outcome);
      });
      await this.#settle(batch);
      this.pause.observe(result.databaseDown);
    }
  }

  /** Deletes the batch's committed records and hands back its reported ones, once each. */
  async #settle(batch: BatchInFlight): Promise<void> {
    if (this.#abandoned) return;
    const { stats } = this;
    const deletes: DeleteEntry[] = [];
    const changes: VisibilityEntry[] = [];
    for (const [messageId, outcome] of batch.settled) {
      const record = batch.byId.get(messageId);
      if (!record || batch.done.has(messageId)) continue;
      batch.done.add(messageId);
      if (outcome.acknowledged) {
        stats.recordsAcknowledged += 1;
        if (this.options.hooks?.dropDeleteAfterSuccess?.(record)) stats.deletesDropped += 1;
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
    const result = await settleMessages(
      this.options.sqs,
      this.options.queueUrl,
      { deletes, changes },
      this.options.logger,
    );
    stats.deleted += result.deleted;
    stats.deleteFailures += result.deleteFailures;
    this.#emit({ type: 'settled', deleted: deletes.map((entry) => entry.messageId), visibility: changes });
  }

  /** The engine's `onOutcome`: see {@link Poller.recordSettled}. */
  recordSettled(outcome: RecordOutcome): void {
    const batch = this.#byMessage.get(outcome.messageId);
    if (!batch) return;
    batch.settled.set(outcome.messageId, outcome);
    batch.hold?.settle(outcome.messageId);
    this.#observe(batch, outcome);
  }

  /** See {@link Poller.idle}. */
  idle(): Promise<void> {
    return this.#tasks.size === 0
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          this.#idleWaiters.add(resolve);
        });
  }

  /** See {@link Poller.stop}. */
  async stop(timeoutMs: number): Promise<PollerStopResult> {
    const { now } = this.settings;
    if (!this.#stopping) {
      this.#stopping = true;
      this.#stopDeadline = now() + timeoutMs;
      this.options.logger.info('poller_stopping', { inFlight: this.stats.inFlight, timeoutMs });
      this.#stopped.abort();
      this.#wakeCapacity();
    }
    // A pending long poll is left to finish (within `waitSeconds`) and what it returns is handed back at once:
    // aborting the request does not cancel it in SQS, which would still deliver to it, and whatever it took
    // would stay invisible for a whole lease. Only a long poll still pending at the stop timeout is aborted.
    const pollTimer = setTimeout(() => this.#receiveAbort?.abort(), Math.max(0, this.#stopDeadline - now()));
    await this.#polling;
    clearTimeout(pollTimer);
    const drained = await this.#drain(Math.max(0, this.#stopDeadline - now()));
    if (!drained) {
      this.#abandoned = true;
      this.#heartbeat.stopAll();
    }
    this.pause.close();
    const { logger } = this.options;
    const { stats } = this;
    (drained ? logger.info : logger.warn).call(logger, drained ? 'poller_stopped' : 'poller_stop_timed_out', {
      inFlight: stats.inFlight,
      received: stats.messagesReceived,
      deleted: stats.deleted,
      released: stats.released,
    });
    return { drained, stats: { ...stats } };
  }

  /** Waits for the records in flight to settle, at most `leftMs`: true if they did. */
  async #drain(leftMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const drained = await Promise.race([
      this.idle().then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), leftMs);
      }),
    ]);
    clearTimeout(timer);
    return drained;
  }
}
