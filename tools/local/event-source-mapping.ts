import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { ConfigError } from '../../lambda/errors.ts';
import { sqsEventRecord } from '../../lambda/sqs/sqs-event-record.ts';
import { batchResponseVerdict } from './batch-response-verdict.ts';
import type { FunctionInvocation } from './function-host.ts';
import { lambdaContext } from './lambda-context.ts';
import { queueCounts } from './local-queues.ts';

/** The function the mapping invokes: the deployed Lambda handler (`(event, context) => response`). */
export type EventSourceMappingHandler = (event: SQSEvent, context: Context) => unknown;

/**
 * A function run out of process within its memory and timeout (the local function host, `function-host.ts`): the
 * mapping hands it each batch's event and reads how the invocation ended.
 */
export interface EventSourceMappingInvoker {
  /** The function timeout (the context's deadline); the invoker enforces it. */
  readonly timeoutMs: number;
  /** The function's memory size (`context.memoryLimitInMB`). */
  readonly memorySizeMb: number;
  invoke(event: SQSEvent, request: { readonly awsRequestId: string }): Promise<FunctionInvocation>;
}

/** Structured logger (Powertools `Logger` fits). Messages carry ids and counts, never bodies. */
export interface EventSourceMappingLogger {
  debug(message: string, extra?: Record<string, unknown>): void;
  info(message: string, extra?: Record<string, unknown>): void;
  warn(message: string, extra?: Record<string, unknown>): void;
  error(message: string, extra?: Record<string, unknown>): void;
}

/** Failure injection for tests and demos. Each hook is optional. */
export interface EventSourceMappingHooks {
  /**
   * Runs before the handler with the event and context. A throw fails the whole batch, as a crash of the
   * runtime before the handler would (the records reappear after their visibility timeout).
   */
  beforeInvoke?(event: SQSEvent, context: Context): void | Promise<void>;
  /**
   * Called for every record the handler reported as successful; `true` skips its delete, as if the process
   * crashed after the database commit and before DeleteMessage. The record reappears after its visibility
   * timeout and is delivered again.
   */
  dropDeleteAfterSuccess?(record: SQSRecord): boolean;
}

/** What one invocation did, reported to {@link EventSourceMappingOptions.onInvocation}. */
export interface InvocationReport {
  readonly awsRequestId: string;
  readonly messageIds: readonly string[];
  /** Records left on the queue (reported, or all of them on a batch failure). */
  readonly failedMessageIds: readonly string[];
  /** `batch-failure` covers a throw, a timeout, an out-of-memory kill and an invalid response (see `reason`). */
  readonly result: 'success' | 'partial-failure' | 'batch-failure';
  /** `error`, `timeout`, `out-of-memory`, `invalid-response` (with `detail`), or undefined. */
  readonly reason?: 'error' | 'timeout' | 'out-of-memory' | 'invalid-response';
  /** Why the response was invalid, or the error's name and message (Lambda's text for a kill). */
  readonly detail?: string;
  /** Lambda's error type of a failed invocation (`Runtime.OutOfMemory`, `Sandbox.Timedout`, the error's name). */
  readonly errorType?: string;
  /** With an invoker: the execution environment's side (cold start, memory, Lambda's REPORT line). */
  readonly function?: Pick<
    FunctionInvocation,
    'environmentId' | 'coldStart' | 'initDurationMs' | 'maxMemoryUsedMb' | 'memorySizeMb' | 'report'
  >;
  /** The value the handler returned (undefined on a throw or a timeout). */
  readonly response?: unknown;
  readonly deleted: number;
  readonly deletesDropped: number;
  readonly startedAt: number;
  readonly durationMs: number;
}

/** Counters of a running mapping (a live view: read it at any time). */
export interface EventSourceMappingStats {
  receives: number;
  receiveErrors: number;
  messagesReceived: number;
  invocations: number;
  /** Invocations that ended as a complete success. */
  succeededInvocations: number;
  partialFailures: number;
  /** Handler throws (including a throwing `beforeInvoke`). */
  errors: number;
  timeouts: number;
  /** Invocations whose environment was killed for memory (an invoker only). */
  outOfMemory: number;
  invalidResponses: number;
  recordsSucceeded: number;
  recordsFailed: number;
  deleted: number;
  deletesDropped: number;
  deleteFailures: number;
  inFlightInvocations: number;
  maxObservedConcurrency: number;
}

/** Settings of {@link startEventSourceMapping}; the names and ranges follow `AWS::Lambda::EventSourceMapping`. */
export interface EventSourceMappingOptions {
  /** SQS client (the local emulator's, or any endpoint's). */
  readonly sqs: SQSClient;
  /** The queue URL exactly as CreateQueue/GetQueueUrl returned it. */
  readonly queueUrl: string;
  /** The handler, called in this process (a timed-out one keeps running; nothing bounds its memory). */
  readonly handler?: EventSourceMappingHandler;
  /**
   * Instead of `handler`: the function in an execution environment of its own, within its memory and timeout
   * (`startFunctionHost`). `functionTimeoutMs` is then its timeout.
   */
  readonly invoker?: EventSourceMappingInvoker;
  /** `context.functionName`. @default 'local-worker' */
  readonly functionName?: string;
  /** Records per invocation, 1–10,000 (FIFO: 1–10); above 10 needs a batching window ≥ 1 s. @default 10 */
  readonly batchSize?: number;
  /** How long to gather records before invoking, 0–300,000 ms (not allowed for FIFO). @default 0 */
  readonly maxBatchingWindowMs?: number;
  /** Invocations in flight at most (Lambda's ScalingConfig.MaximumConcurrency; AWS's minimum is 2). @default 2 */
  readonly maxConcurrency?: number;
  /** The function timeout: a handler still running after it fails its whole batch. @default 30,000 (an invoker's own) */
  readonly functionTimeoutMs?: number;
  /** Override the queue's visibility timeout on receive (seconds). @default the queue's own */
  readonly visibilityTimeoutSeconds?: number;
  /** Concurrent pollers (long-poll loops). @default 1 */
  readonly pollers?: number;
  /**
   * WaitTimeSeconds of the first receive of a batch, 0–20 (Lambda uses 20). `stop()` aborts a pending long
   * poll; a message that a server hands to an aborted poll reappears after its visibility timeout, like any
   * lost response. @default 20
   */
  readonly waitTimeSeconds?: number;
  /**
   * Start enabled (Lambda's `Enabled`). A disabled mapping receives nothing until {@link EventSourceMapping.setEnabled}.
   * @default true
   */
  readonly enabled?: boolean;
  /** FunctionResponseTypes ReportBatchItemFailures. @default true */
  readonly reportBatchItemFailures?: boolean;
  /** `awsRegion` of the records. @default the region in the queue ARN */
  readonly region?: string;
  readonly hooks?: EventSourceMappingHooks;
  /** Called after every invocation (and its deletes). */
  readonly onInvocation?: (report: InvocationReport) => void;
  /** @default silent */
  readonly logger?: EventSourceMappingLogger;
}

/** A running mapping, returned by {@link startEventSourceMapping}. */
export interface EventSourceMapping {
  /** ARN of the queue, as in `eventSourceARN`. */
  readonly eventSourceArn: string;
  readonly fifo: boolean;
  readonly stats: Readonly<EventSourceMappingStats>;
  /** Whether the mapping polls (Lambda's `Enabled`). */
  readonly enabled: boolean;
  /** The current `MaximumConcurrency`. */
  readonly maxConcurrency: number;
  /** When `enabled` or `maxConcurrency` last changed (Lambda's `LastModified`), epoch ms. */
  readonly lastModified: number;
  /**
   * Enables or disables polling, like UpdateEventSourceMapping `Enabled`. Disabled, no new receive starts and a
   * batch being gathered stops gathering; a receive already waiting completes, and its records, like batches
   * already invoked, are invoked and settled as usual (never dropped, so no receive goes unseen).
   */
  setEnabled(enabled: boolean): void;
  /** Changes `MaximumConcurrency` (ScalingConfig) while running: 1–1000. */
  setMaxConcurrency(maxConcurrency: number): void;
  /** Resolves when no batch is being gathered or invoked and, while disabled, no receive is pending (the queue may still hold messages). */
  idle(): Promise<void>;
  /**
   * Resolves when the queue has no visible, in-flight or delayed message and the mapping is idle, i.e. every
   * message was deleted or moved to the DLQ.
   *
   * @throws Error with the remaining counts after `timeoutMs` (default 30,000).
   */
  drain(options?: { timeoutMs?: number }): Promise<void>;
  /**
   * Stops polling (aborting an idle long poll), lets gathered batches and in-flight invocations finish with
   * their deletes, and resolves with the final stats.
   */
  stop(): Promise<EventSourceMappingStats>;
}

/** How one invocation ended: the handler's response, or why the whole batch failed. */
interface Ended {
  readonly response?: unknown;
  readonly reason?: 'error' | 'timeout' | 'out-of-memory';
  readonly detail?: string;
  readonly errorType?: string;
  readonly function?: InvocationReport['function'];
}

const silentLogger: EventSourceMappingLogger = { debug() {}, info() {}, warn() {}, error() {} };

class InvocationTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`Task timed out after ${(timeoutMs / 1000).toFixed(2)} seconds`);
    this.name = 'InvocationTimeoutError';
  }
}

/** Checks the settings like the Lambda API does and lists every problem. */
function validate(options: EventSourceMappingOptions, fifo: boolean): void {
  const problems: string[] = [];
  const check = (name: string, value: number, min: number, max: number) => {
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name} must be a whole number from ${min} to ${max} (given ${value})`);
    }
  };
  const batchSize = options.batchSize ?? 10;
  const windowMs = options.maxBatchingWindowMs ?? 0;
  check('batchSize', batchSize, 1, fifo ? 10 : 10_000);
  check('maxBatchingWindowMs', windowMs, 0, 300_000);
  check('maxConcurrency', options.maxConcurrency ?? 2, 1, 1000);
  check('functionTimeoutMs', options.functionTimeoutMs ?? options.invoker?.timeoutMs ?? 30_000, 1, 900_000);
  if (!options.handler === !options.invoker) {
    problems.push('give either handler (in this process) or invoker (a function host), not both or neither');
  }
  if (
    options.invoker &&
    options.functionTimeoutMs !== undefined &&
    options.functionTimeoutMs !== options.invoker.timeoutMs
  ) {
    problems.push(
      `functionTimeoutMs (${options.functionTimeoutMs}) differs from the invoker's timeout (${options.invoker.timeoutMs}); leave functionTimeoutMs out`,
    );
  }
  check('pollers', options.pollers ?? 1, 1, 100);
  check('waitTimeSeconds', options.waitTimeSeconds ?? 20, 0, 20);
  if (options.visibilityTimeoutSeconds !== undefined) {
    check('visibilityTimeoutSeconds', options.visibilityTimeoutSeconds, 0, 43_200);
  }
  if (batchSize > 10 && windowMs < 1000) {
    problems.push(
      `batchSize above 10 (given ${batchSize}) needs maxBatchingWindowMs of at least 1000 (given ${windowMs})`,
    );
  }
  if (fifo && windowMs > 0) {
    problems.push(
      `FIFO queues do not support a batching window; set maxBatchingWindowMs to 0 (given ${windowMs})`,
    );
  }
  if (problems.length > 0) throw new ConfigError(`Invalid event source mapping:\n- ${problems.join('\n- ')}`);
}

/** A counting semaphore with FIFO waiters, resizable while in use. */
function semaphore(initial: number) {
  let size = initial;
  let free = initial; // negative after a shrink, until enough holders release
  const waiters: (() => void)[] = [];
  return {
    get size() {
      return size;
    },
    /** Changes the number of slots; holders above a smaller size keep theirs until they release. */
    resize: (next: number) => {
      free += next - size;
      size = next;
      while (free > 0 && waiters.length > 0) {
        free -= 1;
        waiters.shift()?.();
      }
    },
    acquire: (): Promise<void> => {
      if (free > 0) {
        free -= 1;
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        waiters.push(resolve);
      });
    },
    release: () => {
      const next = free >= 0 ? waiters.shift() : undefined;
      if (next) next();
      else free += 1;
    },
    /** Wakes every waiter (each must release what it was given). */
    wakeAll: () => {
      for (const waiter of waiters.splice(0)) {
        free -= 1;
        waiter();
      }
    },
  };
}

/**
 * Runs Lambda's SQS event source mapping locally against any SQS endpoint (the `fauxqs` emulator by
 * default), invoking the same handler code that is deployed, with the same contract:
 *
 * - **Polling**: `pollers` loops long-poll the queue with `MessageSystemAttributeNames: ['All']` and
 *   `MessageAttributeNames: ['All']`, gathering up to `batchSize` records for at most `maxBatchingWindowMs`.
 *   A poller takes a concurrency slot before it receives, so at most `maxConcurrency` batches are held or
 *   invoked at once and messages are not received while the function is saturated.
 * - **Records**: Lambda-shaped (`sqsEventRecord`), `eventSourceARN` from the queue's `QueueArn`.
 * - **Context**: `lambdaContext` with `getRemainingTimeInMillis()` counting down from `functionTimeoutMs`.
 * - **Verdict** (`batchResponseVerdict`): void/null/empty `batchItemFailures` → all succeeded; an
 *   `itemIdentifier` that is empty, null, missing or not in the batch → the whole batch failed; listed ids
 *   failed; a throw or a timeout → the whole batch failed. A `handler` runs in this process: one
 *   that timed out keeps running in the background (Lambda would end it), its late result ignored, and nothing bounds
 *   its memory. With an `invoker` (`startFunctionHost`) it runs in an execution environment of its own, within the
 *   function's memory and timeout: killed at the timeout, or above its memory (`out-of-memory`, counted in
 *   `outOfMemory`), the whole batch failed, as Lambda fails it.
 * - **Acknowledgement**: successes are deleted with DeleteMessageBatch (10 per call); failures are left alone
 *   and reappear when their visibility timeout ends (the handler may have changed it). SQS itself moves a
 *   message to the DLQ when it is received more than the RedrivePolicy's `maxReceiveCount` times — `fauxqs`
 *   does this on receive, like SQS.
 * - **FIFO**: batches keep the order SQS returns within a message group, and two batches holding the same
 *   group are never invoked at the same time (the later one waits for the earlier one).
 *
 * @example
 * ```ts
 * const esm = await startEventSourceMapping({ sqs, queueUrl, handler, batchSize: 10, maxConcurrency: 2 });
 * await esm.drain();
 * await esm.stop();
 * ```
 */
export async function startEventSourceMapping(
  options: EventSourceMappingOptions,
): Promise<EventSourceMapping> {
  const { sqs, queueUrl, handler, invoker } = options;
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn', 'FifoQueue'] }),
  );
  const eventSourceArn = Attributes.QueueArn;
  if (!eventSourceArn) {
    throw new ConfigError(
      `Queue ${queueUrl} reported no QueueArn; pass the URL that CreateQueue/GetQueueUrl returned`,
    );
  }
  const fifo = Attributes.FifoQueue === 'true';
  validate(options, fifo);

  const logger = options.logger ?? silentLogger;
  const hooks = options.hooks ?? {};
  const batchSize = options.batchSize ?? 10;
  const windowMs = options.maxBatchingWindowMs ?? 0;
  const functionTimeoutMs = options.functionTimeoutMs ?? invoker?.timeoutMs ?? 30_000;
  const waitTimeSeconds = options.waitTimeSeconds ?? 20;
  const functionName = options.functionName ?? 'local-worker';
  const awsRegion = options.region ?? eventSourceArn.split(':')[3] ?? 'us-east-1';
  const slots = semaphore(options.maxConcurrency ?? 2);
  let enabled = options.enabled ?? true;
  let lastModified = Date.now();
  /** Pollers waiting for the mapping to be enabled (or stopped). */
  const enableWaiters: (() => void)[] = [];
  const whenEnabled = (): Promise<void> =>
    enabled || stopping
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          enableWaiters.push(resolve);
        });

  const stats: EventSourceMappingStats = {
    receives: 0,
    receiveErrors: 0,
    messagesReceived: 0,
    invocations: 0,
    succeededInvocations: 0,
    partialFailures: 0,
    errors: 0,
    timeouts: 0,
    outOfMemory: 0,
    invalidResponses: 0,
    recordsSucceeded: 0,
    recordsFailed: 0,
    deleted: 0,
    deletesDropped: 0,
    deleteFailures: 0,
    inFlightInvocations: 0,
    maxObservedConcurrency: 0,
  };
  let stopping = false;
  const abort = new AbortController();
  let busy = 0; // batches being gathered (with at least one message) or invoked
  /** ReceiveMessage calls in progress, and what aborts them when the mapping is disabled. */
  let receiving = 0;
  let receiveAbort = new AbortController();
  const idleWaiters: (() => void)[] = [];
  /** Idle: no batch in progress and, while disabled, no receive that could still return messages. */
  const isIdle = () => busy === 0 && (enabled || receiving === 0);
  const notifyIdle = () => {
    if (isIdle()) for (const resolve of idleWaiters.splice(0)) resolve();
  };
  const inFlight = new Set<Promise<void>>();
  /** FIFO: message group → the invocation currently holding it. */
  const groupsInFlight = new Map<string, Promise<void>>();

  const markBusy = () => {
    busy += 1;
  };
  const markDone = () => {
    busy -= 1;
    notifyIdle();
  };

  async function receive(max: number, wait: number): Promise<Message[]> {
    stats.receives += 1;
    receiving += 1;
    // Disabling the mapping aborts a pending receive: from then on it receives nothing (like stop()).
    const signal = AbortSignal.any([abort.signal, receiveAbort.signal]);
    const { Messages = [] } = await sqs
      .send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: max,
          WaitTimeSeconds: wait,
          MessageSystemAttributeNames: ['All'],
          MessageAttributeNames: ['All'],
          ...(options.visibilityTimeoutSeconds !== undefined
            ? { VisibilityTimeout: options.visibilityTimeoutSeconds }
            : {}),
        }),
        { abortSignal: signal },
      )
      .finally(() => {
        receiving -= 1;
        notifyIdle();
      });
    stats.messagesReceived += Messages.length;
    return Messages;
  }

  /** Gathers one batch: a long poll, then more receives until the batch is full or the window ends. */
  async function gatherBatch(): Promise<Message[]> {
    const first = await receive(Math.min(10, batchSize), waitTimeSeconds);
    if (first.length === 0) {
      if (waitTimeSeconds === 0) await sleep(20); // short polling: do not spin
      return [];
    }
    markBusy();
    // A message received twice while gathering (its visibility ended) keeps its latest receipt handle.
    const batch = new Map<string, Message>(first.map((message) => [message.MessageId as string, message]));
    const windowEnd = Date.now() + windowMs;
    try {
      while (batch.size < batchSize && !stopping && enabled) {
        const remaining = windowEnd - Date.now();
        if (remaining <= 0) break;
        const wait = Math.min(20, Math.floor(remaining / 1000));
        const more = await receive(Math.min(10, batchSize - batch.size), wait);
        for (const message of more) batch.set(message.MessageId as string, message);
        if (more.length === 0 && wait === 0) await sleep(Math.min(remaining, 20));
      }
    } catch (error) {
      // Keep what was gathered: it is invisible now and would otherwise wait out its visibility timeout.
      if (!stopping && enabled)
        logger.warn('Receive failed while gathering a batch; invoking with the records gathered', {
          queueUrl,
          records: batch.size,
          error: describeError(error),
        });
    }
    return [...batch.values()];
  }

  async function deleteRecords(records: readonly SQSRecord[]): Promise<number> {
    let deleted = 0;
    for (let start = 0; start < records.length; start += 10) {
      const chunk = records.slice(start, start + 10);
      try {
        const result = await sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: chunk.map((record, index) => ({
              Id: String(index),
              ReceiptHandle: record.receiptHandle,
            })),
          }),
        );
        deleted += result.Successful?.length ?? 0;
        for (const failure of result.Failed ?? []) {
          stats.deleteFailures += 1;
          logger.warn('DeleteMessageBatch entry failed; the message will be delivered again', {
            messageId: chunk[Number(failure.Id)]?.messageId,
            code: failure.Code,
          });
        }
      } catch (error) {
        stats.deleteFailures += chunk.length;
        logger.warn('DeleteMessageBatch failed; the messages will be delivered again', {
          messageIds: chunk.map((record) => record.messageId),
          error: describeError(error),
        });
      }
    }
    return deleted;
  }

  async function invoke(messages: readonly Message[]): Promise<void> {
    const records = messages.map((message) =>
      sqsEventRecord(message, { eventSourceArn: eventSourceArn as string, awsRegion }),
    );
    const event: SQSEvent = { Records: records };
    const awsRequestId = randomUUID();
    stats.invocations += 1;
    stats.inFlightInvocations += 1;
    stats.maxObservedConcurrency = Math.max(stats.maxObservedConcurrency, stats.inFlightInvocations);
    const startedAt = Date.now();
    const ended = await call(event, awsRequestId);
    const { response, reason, detail } = ended;
    const verdict = reason
      ? {
          result: 'batch-failure' as const,
          failedMessageIds: records.map((record) => record.messageId),
          reason: detail,
        }
      : batchResponseVerdict(response, records, { reportBatchItemFailures: options.reportBatchItemFailures });
    return settle(records, startedAt, awsRequestId, ended, verdict);
  }

  /** Runs the handler, in this process (raced against the timeout) or through the invoker. */
  async function call(event: SQSEvent, awsRequestId: string): Promise<Ended> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const context = lambdaContext({
        functionName,
        timeoutMs: functionTimeoutMs,
        region: awsRegion,
        awsRequestId,
        ...(invoker ? { memoryLimitInMB: invoker.memorySizeMb } : {}),
      });
      if (invoker) {
        await hooks.beforeInvoke?.(event, context);
        const invocation = await invoker.invoke(event, { awsRequestId });
        const facts = {
          environmentId: invocation.environmentId,
          coldStart: invocation.coldStart,
          ...(invocation.initDurationMs !== undefined ? { initDurationMs: invocation.initDurationMs } : {}),
          maxMemoryUsedMb: invocation.maxMemoryUsedMb,
          memorySizeMb: invocation.memorySizeMb,
          report: invocation.report,
        };
        return invocation.ok
          ? { response: invocation.response, function: facts }
          : {
              reason: invocation.reason,
              detail: invocation.detail,
              errorType: invocation.errorType,
              function: facts,
            };
      }
      const run = (async () => {
        await hooks.beforeInvoke?.(event, context);
        return (handler as EventSourceMappingHandler)(event, context);
      })();
      run.catch(() => {}); // a late rejection after a timeout is not unhandled
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new InvocationTimeoutError(functionTimeoutMs)), functionTimeoutMs);
      });
      return { response: await Promise.race([run, timeout]) };
    } catch (error) {
      return {
        reason: error instanceof InvocationTimeoutError ? 'timeout' : 'error',
        detail: describeError(error),
        errorType: error instanceof Error ? error.name : typeof error,
      };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Deletes what succeeded, counts, logs and reports one invocation. */
  async function settle(
    records: readonly SQSRecord[],
    startedAt: number,
    awsRequestId: string,
    ended: Ended,
    verdict: ReturnType<typeof batchResponseVerdict>,
  ): Promise<void> {
    const { response } = ended;
    let reason: InvocationReport['reason'] = ended.reason;
    let detail = ended.detail;
    if (!reason && verdict.result === 'batch-failure') {
      reason = 'invalid-response';
      detail = verdict.reason;
    }
    const failed = new Set(verdict.failedMessageIds);
    const succeeded = records.filter((record) => !failed.has(record.messageId));
    const toDelete = succeeded.filter((record) => !hooks.dropDeleteAfterSuccess?.(record));
    const deleted = await deleteRecords(toDelete);

    stats.inFlightInvocations -= 1;
    stats.recordsSucceeded += succeeded.length;
    stats.recordsFailed += failed.size;
    stats.deleted += deleted;
    stats.deletesDropped += succeeded.length - toDelete.length;
    if (verdict.result === 'success') stats.succeededInvocations += 1;
    if (verdict.result === 'partial-failure') stats.partialFailures += 1;
    if (reason === 'error') stats.errors += 1;
    if (reason === 'timeout') stats.timeouts += 1;
    if (reason === 'out-of-memory') stats.outOfMemory += 1;
    if (reason === 'invalid-response') stats.invalidResponses += 1;
    const report: InvocationReport = {
      awsRequestId,
      messageIds: records.map((record) => record.messageId),
      failedMessageIds: verdict.failedMessageIds,
      result: verdict.result,
      ...(reason ? { reason, detail } : {}),
      ...(ended.errorType ? { errorType: ended.errorType } : {}),
      ...(ended.function ? { function: ended.function } : {}),
      response,
      deleted,
      deletesDropped: succeeded.length - toDelete.length,
      startedAt,
      durationMs: Date.now() - startedAt,
    };
    const log = reason ? logger.warn : logger.debug;
    log.call(logger, 'Invocation finished', {
      awsRequestId,
      records: records.length,
      result: verdict.result,
      failed: failed.size,
      reason,
      detail,
      durationMs: report.durationMs,
    });
    try {
      options.onInvocation?.(report);
    } catch (error) {
      logger.error('onInvocation listener threw', { error: describeError(error) });
    }
  }

  /** Starts an invocation in the background; FIFO batches first wait for invocations holding their groups. */
  function dispatch(messages: readonly Message[]): void {
    const groups = fifo
      ? [
          ...new Set(
            messages.map((message) => message.Attributes?.MessageGroupId).filter((id): id is string => !!id),
          ),
        ]
      : [];
    const before = [
      ...new Set(groups.map((group) => groupsInFlight.get(group)).filter((p): p is Promise<void> => !!p)),
    ];
    const task: Promise<void> = Promise.all(before)
      .then(() => invoke(messages))
      .catch((error) => logger.error('Invocation failed unexpectedly', { error: describeError(error) }))
      .finally(() => {
        for (const group of groups) if (groupsInFlight.get(group) === task) groupsInFlight.delete(group);
        inFlight.delete(task);
        slots.release();
        markDone();
      });
    for (const group of groups) groupsInFlight.set(group, task);
    inFlight.add(task);
  }

  async function poll(poller: number): Promise<void> {
    let failures = 0;
    while (!stopping) {
      await whenEnabled();
      await slots.acquire();
      if (stopping || !enabled) {
        slots.release();
        continue;
      }
      let messages: Message[];
      try {
        messages = await gatherBatch();
        failures = 0;
      } catch (error) {
        slots.release();
        if (stopping) break; // the idle long poll was aborted by stop()
        if (!enabled) continue; // aborted by setEnabled(false)
        stats.receiveErrors += 1;
        failures += 1;
        logger.warn('ReceiveMessage failed; retrying', { queueUrl, poller, error: describeError(error) });
        await sleep(Math.min(2000, 50 * 2 ** failures));
        continue;
      }
      if (messages.length === 0) {
        slots.release();
        continue;
      }
      dispatch(messages);
    }
  }

  const pollers = Array.from({ length: options.pollers ?? 1 }, (_, index) => poll(index));
  logger.info('Event source mapping started', {
    queueUrl,
    eventSourceArn,
    fifo,
    batchSize,
    maxBatchingWindowMs: windowMs,
    maxConcurrency: options.maxConcurrency ?? 2,
    pollers: pollers.length,
    functionTimeoutMs,
  });

  const idle = () =>
    isIdle()
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          idleWaiters.push(resolve);
        });

  return {
    eventSourceArn,
    fifo,
    stats,
    get enabled() {
      return enabled;
    },
    get maxConcurrency() {
      return slots.size;
    },
    get lastModified() {
      return lastModified;
    },
    setEnabled(next) {
      if (next === enabled) return;
      enabled = next;
      lastModified = Date.now();
      if (next) for (const resolve of enableWaiters.splice(0)) resolve();
      else {
        receiveAbort.abort();
        receiveAbort = new AbortController();
      }
      logger.info(next ? 'Event source mapping enabled' : 'Event source mapping disabled', { queueUrl });
    },
    setMaxConcurrency(next) {
      if (!Number.isInteger(next) || next < 1 || next > 1000) {
        throw new ConfigError(`maxConcurrency must be a whole number from 1 to 1000 (given ${next})`);
      }
      if (next === slots.size) return;
      slots.resize(next);
      lastModified = Date.now();
      logger.info('Event source mapping concurrency changed', { queueUrl, maxConcurrency: next });
    },
    idle,
    async drain({ timeoutMs = 30_000 } = {}) {
      const deadline = Date.now() + timeoutMs;
      let quietChecks = 0;
      while (Date.now() < deadline) {
        await idle();
        const counts = await queueCounts(sqs, queueUrl);
        quietChecks =
          busy === 0 && counts.visible + counts.inFlight + counts.delayed === 0 ? quietChecks + 1 : 0;
        if (quietChecks >= 2) return;
        await sleep(50);
      }
      const counts = await queueCounts(sqs, queueUrl);
      throw new Error(
        `Queue ${queueUrl} did not drain within ${timeoutMs} ms (visible ${counts.visible}, in flight ${counts.inFlight}, delayed ${counts.delayed}, batches in progress ${busy})`,
      );
    },
    async stop() {
      stopping = true;
      abort.abort();
      for (const resolve of enableWaiters.splice(0)) resolve();
      slots.wakeAll();
      await Promise.all(pollers);
      while (inFlight.size > 0) await Promise.all([...inFlight]);
      if (busy === 0) for (const resolve of idleWaiters.splice(0)) resolve();
      logger.info('Event source mapping stopped', { queueUrl, invocations: stats.invocations });
      return { ...stats };
    },
  };
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
