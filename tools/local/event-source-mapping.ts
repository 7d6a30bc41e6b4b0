import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { ConfigError } from '../../lambda/errors.ts';
import { EventSourceMappingRunner } from './event-source-mapping-runner.ts';
import type { FunctionInvocation } from './function-host.ts';

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
  const { sqs, queueUrl } = options;
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
  // The runner holds the state and the loops; this object is the public face, with the same shape as before.
  const runner = new EventSourceMappingRunner(options, eventSourceArn, fifo);
  runner.start();
  return {
    eventSourceArn,
    fifo,
    stats: runner.stats,
    get enabled() {
      return runner.enabled;
    },
    get maxConcurrency() {
      return runner.maxConcurrency;
    },
    get lastModified() {
      return runner.lastModified;
    },
    setEnabled: (next) => runner.setEnabled(next),
    setMaxConcurrency: (next) => runner.setMaxConcurrency(next),
    idle: () => runner.idle(),
    drain: (drainOptions) => runner.drain(drainOptions),
    stop: () => runner.stop(),
  };
}
