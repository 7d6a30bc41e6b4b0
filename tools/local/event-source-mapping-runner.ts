import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Message, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { ConfigError } from '../../lambda/errors.ts';
import { sqsEventRecord } from '../../lambda/sqs/sqs-event-record.ts';
import { batchResponseVerdict } from './batch-response-verdict.ts';
import { emptyStats } from './count-invocation.ts';
import type {
  EventSourceMappingHooks,
  EventSourceMappingLogger,
  EventSourceMappingOptions,
  EventSourceMappingStats,
} from './event-source-mapping.ts';
import { gatherBatch } from './gather-batch.ts';
import { queueCounts } from './local-queues.ts';
import { ResizableSemaphore } from './resizable-semaphore.ts';
import { describeError, type InvocationTarget, runInvocation } from './run-invocation.ts';
import { type BatchVerdict, type SettleContext, settleInvocation } from './settle-invocation.ts';

const silentLogger: EventSourceMappingLogger = { debug() {}, info() {}, warn() {}, error() {} };

/**
 * The running state of one event source mapping (what `startEventSourceMapping` returns wraps it): pollers that
 * take a concurrency slot, gather a batch and dispatch it; invocations that run the handler or the invoker, judge
 * the response, delete what succeeded and report. Options are validated by the caller.
 *
 * @internal
 */
export class EventSourceMappingRunner {
  readonly stats: EventSourceMappingStats = emptyStats();
  readonly #options: EventSourceMappingOptions;
  readonly #sqs: SQSClient;
  readonly #queueUrl: string;
  readonly #eventSourceArn: string;
  readonly #fifo: boolean;
  readonly #target: InvocationTarget;
  readonly #logger: EventSourceMappingLogger;
  readonly #hooks: EventSourceMappingHooks;
  readonly #batchSize: number;
  readonly #windowMs: number;
  readonly #functionTimeoutMs: number;
  readonly #waitTimeSeconds: number;
  readonly #awsRegion: string;
  readonly #slots: ResizableSemaphore;
  #enabled: boolean;
  #lastModified = Date.now();
  /** Pollers waiting for the mapping to be enabled (or stopped). */
  readonly #enableWaiters: (() => void)[] = [];
  #stopping = false;
  readonly #abort = new AbortController();
  /** Batches being gathered (with at least one message) or invoked. */
  #busy = 0;
  /** ReceiveMessage calls in progress, and what aborts them when the mapping is disabled. */
  #receiving = 0;
  #receiveAbort = new AbortController();
  readonly #idleWaiters: (() => void)[] = [];
  readonly #inFlight = new Set<Promise<void>>();
  /** FIFO: message group → the invocation currently holding it. */
  readonly #groupsInFlight = new Map<string, Promise<void>>();
  #pollers: Promise<void>[] = [];

  constructor(options: EventSourceMappingOptions, eventSourceArn: string, fifo: boolean) {
    this.#options = options;
    this.#sqs = options.sqs;
    this.#queueUrl = options.queueUrl;
    this.#eventSourceArn = eventSourceArn;
    this.#fifo = fifo;
    this.#logger = options.logger ?? silentLogger;
    this.#hooks = options.hooks ?? {};
    this.#batchSize = options.batchSize ?? 10;
    this.#windowMs = options.maxBatchingWindowMs ?? 0;
    this.#functionTimeoutMs = options.functionTimeoutMs ?? options.invoker?.timeoutMs ?? 30_000;
    this.#waitTimeSeconds = options.waitTimeSeconds ?? 20;
    this.#awsRegion = options.region ?? eventSourceArn.split(':')[3] ?? 'us-east-1';
    this.#target = {
      functionName: options.functionName ?? 'local-worker',
      functionTimeoutMs: this.#functionTimeoutMs,
      awsRegion: this.#awsRegion,
      hooks: this.#hooks,
      ...(options.handler ? { handler: options.handler } : {}),
      ...(options.invoker ? { invoker: options.invoker } : {}),
    };
    this.#slots = new ResizableSemaphore(options.maxConcurrency ?? 2);
    this.#enabled = options.enabled ?? true;
  }

  get enabled(): boolean {
    return this.#enabled;
  }

  get maxConcurrency(): number {
    return this.#slots.size;
  }

  get lastModified(): number {
    return this.#lastModified;
  }

  /** Starts the pollers. */
  start(): void {
    this.#pollers = Array.from({ length: this.#options.pollers ?? 1 }, (_, index) => this.#poll(index));
    this.#logger.info('Event source mapping started', {
      queueUrl: this.#queueUrl,
      eventSourceArn: this.#eventSourceArn,
      fifo: this.#fifo,
      batchSize: this.#batchSize,
      maxBatchingWindowMs: this.#windowMs,
      maxConcurrency: this.#options.maxConcurrency ?? 2,
      pollers: this.#pollers.length,
      functionTimeoutMs: this.#functionTimeoutMs,
    });
  }

  /** UpdateEventSourceMapping `Enabled`: disabling aborts pending receives. */
  setEnabled(next: boolean): void {
    if (next === this.#enabled) return;
    this.#enabled = next;
    this.#lastModified = Date.now();
    if (next) for (const resolve of this.#enableWaiters.splice(0)) resolve();
    else {
      this.#receiveAbort.abort();
      this.#receiveAbort = new AbortController();
    }
    this.#logger.info(next ? 'Event source mapping enabled' : 'Event source mapping disabled', {
      queueUrl: this.#queueUrl,
    });
  }

  /** ScalingConfig `MaximumConcurrency`, 1–1000. */
  setMaxConcurrency(next: number): void {
    if (!Number.isInteger(next) || next < 1 || next > 1000) {
      throw new ConfigError(`maxConcurrency must be a whole number from 1 to 1000 (given ${next})`);
    }
    if (next === this.#slots.size) return;
    this.#slots.resize(next);
    this.#lastModified = Date.now();
    this.#logger.info('Event source mapping concurrency changed', {
      queueUrl: this.#queueUrl,
      maxConcurrency: next,
    });
  }

  /** Resolves when no batch is in progress and, while disabled, no receive is pending. */
  idle(): Promise<void> {
    return this.#isIdle()
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          this.#idleWaiters.push(resolve);
        });
  }

  /** Resolves when the queue holds no message and the mapping is idle (two quiet checks in a row). */
  async drain({ timeoutMs = 30_000 }: { timeoutMs?: number } = {}): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let quietChecks = 0;
    while (Date.now() < deadline) {
      await this.idle();
      const counts = await queueCounts(this.#sqs, this.#queueUrl);
      const empty = counts.visible + counts.inFlight + counts.delayed === 0;
      quietChecks = this.#busy === 0 && empty ? quietChecks + 1 : 0;
      if (quietChecks >= 2) return;
      await sleep(50);
    }
    const counts = await queueCounts(this.#sqs, this.#queueUrl);
    throw new Error(
      `Queue ${this.#queueUrl} did not drain within ${timeoutMs} ms (visible ${counts.visible}, in flight ${counts.inFlight}, delayed ${counts.delayed}, batches in progress ${this.#busy})`,
    );
  }

  /** Stops polling, lets gathered batches and in-flight invocations settle, and returns the final stats. */
  async stop(): Promise<EventSourceMappingStats> {
    this.#stopping = true;
    this.#abort.abort();
    for (const resolve of this.#enableWaiters.splice(0)) resolve();
    this.#slots.wakeAll();
    await Promise.all(this.#pollers);
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
    if (this.#busy === 0) for (const resolve of this.#idleWaiters.splice(0)) resolve();
    this.#logger.info('Event source mapping stopped', {
      queueUrl: this.#queueUrl,
      invocations: this.stats.invocations,
    });
    return { ...this.stats };
  }

  /** Idle: no batch in progress and, while disabled, no receive that could still return messages. */
  #isIdle(): boolean {
    return this.#busy === 0 && (this.#enabled || this.#receiving === 0);
  }

  #notifyIdle(): void {
    if (this.#isIdle()) for (const resolve of this.#idleWaiters.splice(0)) resolve();
  }

  #whenEnabled(): Promise<void> {
    return this.#enabled || this.#stopping
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          this.#enableWaiters.push(resolve);
        });
  }

  /** One poller: take a slot, gather a batch, dispatch it; back off on receive errors. */
  async #poll(poller: number): Promise<void> {
    let failures = 0;
    while (!this.#stopping) {
      await this.#whenEnabled();
      await this.#slots.acquire();
      if (this.#stopping || !this.#enabled) {
        this.#slots.release();
        continue;
      }
      let messages: Message[];
      try {
        messages = await this.#gather();
        failures = 0;
      } catch (error) {
        this.#slots.release();
        if (this.#stopping) break; // the idle long poll was aborted by stop()
        if (!this.#enabled) continue; // aborted by setEnabled(false)
        this.stats.receiveErrors += 1;
        failures += 1;
        this.#logger.warn('ReceiveMessage failed; retrying', {
          queueUrl: this.#queueUrl,
          poller,
          error: describeError(error),
        });
        await sleep(Math.min(2000, 50 * 2 ** failures));
        continue;
      }
      if (messages.length === 0) {
        this.#slots.release();
        continue;
      }
      this.#dispatch(messages);
    }
  }

  #gather(): Promise<Message[]> {
    return gatherBatch({
      batchSize: this.#batchSize,
      windowMs: this.#windowMs,
      waitTimeSeconds: this.#waitTimeSeconds,
      receive: (max, wait) => this.#receive(max, wait),
      gathering: () => !this.#stopping && this.#enabled,
      onFirstMessages: () => {
        this.#busy += 1;
      },
      onGatherError: (error, records) => {
        if (!this.#stopping && this.#enabled)
          this.#logger.warn('Receive failed while gathering a batch; invoking with the records gathered', {
            queueUrl: this.#queueUrl,
            records,
            error: describeError(error),
          });
      },
    });
  }

  async #receive(max: number, wait: number): Promise<Message[]> {
    this.stats.receives += 1;
    this.#receiving += 1;
    // Disabling the mapping aborts a pending receive: from then on it receives nothing (like stop()).
    const signal = AbortSignal.any([this.#abort.signal, this.#receiveAbort.signal]);
    const visibility = this.#options.visibilityTimeoutSeconds;
    const { Messages = [] } = await this.#sqs
      .send(
        new ReceiveMessageCommand({
          QueueUrl: this.#queueUrl,
          MaxNumberOfMessages: max,
          WaitTimeSeconds: wait,
          MessageSystemAttributeNames: ['All'],
          MessageAttributeNames: ['All'],
          ...(visibility !== undefined ? { VisibilityTimeout: visibility } : {}),
        }),
        { abortSignal: signal },
      )
      .finally(() => {
        this.#receiving -= 1;
        this.#notifyIdle();
      });
    this.stats.messagesReceived += Messages.length;
    return Messages;
  }

  /** Starts an invocation in the background; FIFO batches first wait for invocations holding their groups. */
  #dispatch(messages: readonly Message[]): void {
    const groups = this.#fifo
      ? [
          ...new Set(
            messages.map((message) => message.Attributes?.MessageGroupId).filter((id): id is string => !!id),
          ),
        ]
      : [];
    const held = groups.map((group) => this.#groupsInFlight.get(group));
    const before = [...new Set(held.filter((p): p is Promise<void> => !!p))];
    const task: Promise<void> = Promise.all(before)
      .then(() => this.#invoke(messages))
      .catch((error) => this.#logger.error('Invocation failed unexpectedly', { error: describeError(error) }))
      .finally(() => {
        for (const group of groups)
          if (this.#groupsInFlight.get(group) === task) this.#groupsInFlight.delete(group);
        this.#inFlight.delete(task);
        this.#slots.release();
        this.#busy -= 1;
        this.#notifyIdle();
      });
    for (const group of groups) this.#groupsInFlight.set(group, task);
    this.#inFlight.add(task);
  }

  async #invoke(messages: readonly Message[]): Promise<void> {
    const records = messages.map((message) =>
      sqsEventRecord(message, { eventSourceArn: this.#eventSourceArn, awsRegion: this.#awsRegion }),
    );
    const awsRequestId = randomUUID();
    const { stats } = this;
    stats.invocations += 1;
    stats.inFlightInvocations += 1;
    stats.maxObservedConcurrency = Math.max(stats.maxObservedConcurrency, stats.inFlightInvocations);
    const startedAt = Date.now();
    const ended = await runInvocation(this.#target, { Records: records }, awsRequestId);
    const verdict: BatchVerdict = ended.reason
      ? {
          result: 'batch-failure',
          failedMessageIds: records.map((record) => record.messageId),
          reason: ended.detail,
        }
      : batchResponseVerdict(ended.response, records, {
          reportBatchItemFailures: this.#options.reportBatchItemFailures,
        });
    const context: SettleContext = {
      sqs: this.#sqs,
      queueUrl: this.#queueUrl,
      hooks: this.#hooks,
      stats,
      logger: this.#logger,
      onInvocation: this.#options.onInvocation,
    };
    return settleInvocation(context, records, startedAt, awsRequestId, ended, verdict);
  }
}
