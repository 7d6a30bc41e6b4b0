import { setTimeout as sleep } from 'node:timers/promises';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { startDropDeletesProxy } from './drop-deletes-proxy.ts';
import {
  type EventSourceMappingStats,
  type InvocationReport,
  startEventSourceMapping,
} from './event-source-mapping.ts';
import { type FunctionHostStats, type FunctionSettings, startFunctionHost } from './function-host.ts';
import { type LimitWatch, trackPollerLimit, watchMappingLimit } from './limit-watch.ts';
import { queueCounts } from './local-queues.ts';
import type { OutcomeRecorder } from './outcome-recorder.ts';
import {
  type PollerTaskExit,
  type PollerTaskSettings,
  type PollerTasksStats,
  startPollerTasks,
} from './poller-process.ts';

/** The worker function's side of a run: its limits and what its environments did. */
export interface FunctionFigures {
  readonly memorySizeMb: number;
  readonly timeoutMs: number;
  readonly stats: FunctionHostStats;
}

/** The poller's side of a run: its task's memory and what its tasks did. */
export interface PollerFigures {
  readonly memoryMiB: number;
  readonly stats: PollerTasksStats & { readonly deletesDropped: number };
  /** Every task that ended, the last one (stopped) included. */
  readonly exits: readonly PollerTaskExit[];
}

/** What consumed a scenario's queue, and its figures. */
export type ConsumerFigures =
  | {
      readonly runtime: 'event-source-mapping';
      readonly esm: EventSourceMappingStats;
      readonly function: FunctionFigures;
    }
  | { readonly runtime: 'poller'; readonly poller: PollerFigures };

/** Options of {@link startScenarioConsumer}. */
export interface ScenarioConsumerOptions {
  readonly runtime: 'event-source-mapping' | 'poller';
  /** The worker function (runtime event-source-mapping). */
  readonly worker?: FunctionSettings;
  /** The poller task (runtime poller). */
  readonly poller?: PollerTaskSettings;
  /** Variables of the run over the component's (a shorter backoff, the demo's lock timeout, …). */
  readonly variables: Readonly<Record<string, string>>;
  /** The client the event source mapping polls with (the worker's role, as Lambda's polls). */
  readonly sqs: SQSClient;
  /** The operator's client, for the queue's counts. */
  readonly inspect: SQSClient;
  readonly queueUrl: string;
  /** Invocations at once (the mapping), or records in flight (the poller). */
  readonly concurrency: number;
  /** Outcomes, read from the worker's log lines. */
  readonly recorder: OutcomeRecorder;
  /** Every line the worker writes (the run's log file). */
  readonly onLogLine?: (line: string) => void;
  /** The crash between commit and delete: true skips the delete of a message received so. */
  readonly dropDelete: (message: { body: string; receiveCount: number }) => boolean;
  /** Overrides the function's timeout. */
  readonly functionTimeoutMs?: number;
  /** Every invocation of the mapping. */
  readonly onInvocation?: (report: InvocationReport) => void;
  /** Every poller task that ended. */
  readonly onTaskExit?: (exit: PollerTaskExit) => void;
}

/** A running consumer of a scenario. */
export interface ScenarioConsumer {
  /** Messages deleted so far (for the progress bar). */
  deleted(): number;
  /** Deletes dropped so far (crashes after commit). */
  deletesDropped(): number;
  /**
   * Resolves when the queue has no visible, in-flight or delayed message (twice in a row).
   *
   * @throws Error with the counts after `timeoutMs`.
   */
  drain(options: { timeoutMs: number }): Promise<void>;
  /**
   * Watches the adaptive limit until the watch is stopped: the mapping's `MaximumConcurrency` moved by the breaker's
   * control loop, run locally from the function's EMF metrics (`probe` is the breaker's probe of the database); the
   * poller's own limit, from its log lines.
   */
  watchLimit(probe: () => Promise<unknown>): LimitWatch;
  stop(): Promise<ConsumerFigures>;
}

/**
 * Starts what consumes a scenario's queue as it runs in AWS, within the limits AWS enforces: the local event source
 * mapping in front of the worker function, run by a local function host (`startFunctionHost`: the deployed entry,
 * bundled, in execution environments of the function's memory and timeout); or the poller as its Fargate task runs
 * (`startPollerTasks`: the real `bin/poller.ts` within the task's memory, replaced when it stops), its crashes after
 * commit injected by a proxy in front of SQS (`startDropDeletesProxy`). Either way the outcomes come from the worker's
 * log lines (`OutcomeRecorder.recordLogLine`).
 */
export async function startScenarioConsumer(options: ScenarioConsumerOptions): Promise<ScenarioConsumer> {
  return options.runtime === 'poller' ? startPollerConsumer(options) : startMappingConsumer(options);
}

/** The poller's tasks behind the proxy that drops deletes. */
async function startPollerConsumer(options: ScenarioConsumerOptions): Promise<ScenarioConsumer> {
  const { recorder } = options;
  const settings = options.poller;
  if (!settings) throw new Error('startScenarioConsumer: runtime poller needs the poller task (poller)');
  const proxy = await startDropDeletesProxy({
    upstream: settings.environment.SQS_ENDPOINT as string,
    shouldDrop: options.dropDelete,
  });
  const exits: PollerTaskExit[] = [];
  const environment: Record<string, string> = {
    ...settings.environment,
    ...options.variables,
    SQS_ENDPOINT: proxy.endpoint,
  };
  const limit = trackPollerLimit({
    ceiling: Number(environment.POLLER_CONCURRENCY ?? options.concurrency),
    floor: Number(environment.POLLER_CONCURRENCY_FLOOR ?? 1),
  });
  const tasks = await startPollerTasks({
    ...settings,
    environment,
    onOutput: (line) => {
      recorder.recordLogLine(line);
      options.onLogLine?.(line);
      limit.onLine(line);
    },
    onExit: (exit) => {
      exits.push(exit);
      options.onTaskExit?.(exit);
    },
  }).catch(async (error: unknown) => {
    await proxy.stop();
    throw error;
  });
  const acknowledged = () => recorder.outcomes.filter((outcome) => outcome.acknowledged).length;
  return {
    deleted: () => Math.max(0, acknowledged() - proxy.dropped),
    deletesDropped: () => proxy.dropped,
    drain: ({ timeoutMs }) => drainQueue(options.inspect, options.queueUrl, timeoutMs),
    watchLimit: () => limit.watch(),
    async stop() {
      await tasks.stop();
      await proxy.stop();
      return {
        runtime: 'poller',
        poller: {
          memoryMiB: tasks.memoryMiB,
          stats: { ...tasks.stats, deletesDropped: proxy.dropped },
          exits,
        },
      };
    },
  };
}

/**
 * Resolves when the queue has no visible, in-flight or delayed message (twice in a row, 100 ms apart).
 *
 * @throws Error with the counts after `timeoutMs`.
 */
async function drainQueue(inspect: SQSClient, queueUrl: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let quietChecks = 0;
  while (Date.now() < deadline) {
    const counts = await queueCounts(inspect, queueUrl);
    quietChecks = counts.visible + counts.inFlight + counts.delayed === 0 ? quietChecks + 1 : 0;
    if (quietChecks >= 2) return;
    await sleep(100);
  }
  const counts = await queueCounts(inspect, queueUrl);
  throw new Error(
    `Queue ${queueUrl} did not drain within ${timeoutMs} ms (visible ${counts.visible}, in flight ${counts.inFlight}, delayed ${counts.delayed})`,
  );
}

/** The local event source mapping in front of the worker function's host. */
async function startMappingConsumer(options: ScenarioConsumerOptions): Promise<ScenarioConsumer> {
  const settings = options.worker;
  if (!settings)
    throw new Error('startScenarioConsumer: runtime event-source-mapping needs the worker function (worker)');
  let metricLines: ((line: string) => void) | undefined;
  const environment = { ...settings.environment, ...options.variables };
  const host = await startFunctionHost({
    ...settings,
    ...(options.functionTimeoutMs !== undefined ? { timeoutMs: options.functionTimeoutMs } : {}),
    environment,
    onOutput: (line) => {
      options.recorder.recordLogLine(line);
      options.onLogLine?.(line);
      metricLines?.(line);
    },
  });
  const esm = await startEventSourceMapping({
    sqs: options.sqs,
    queueUrl: options.queueUrl,
    invoker: host,
    functionName: settings.functionName,
    batchSize: 10,
    maxBatchingWindowMs: 50,
    maxConcurrency: options.concurrency,
    pollers: 2,
    waitTimeSeconds: 1,
    region: settings.region,
    hooks: {
      dropDeleteAfterSuccess: (record) =>
        options.dropDelete({
          body: record.body,
          receiveCount: Number(record.attributes.ApproximateReceiveCount),
        }),
    },
    ...(options.onInvocation ? { onInvocation: options.onInvocation } : {}),
  }).catch(async (error: unknown) => {
    await host.stop();
    throw error;
  });
  return {
    deleted: () => esm.stats.deleted,
    deletesDropped: () => esm.stats.deletesDropped,
    drain: (drainOptions) => esm.drain(drainOptions),
    watchLimit: (probe) =>
      watchMappingLimit({
        esm,
        probe,
        source: {
          namespace: environment.POWERTOOLS_METRICS_NAMESPACE ?? 'SqsInboxWorker',
          service: environment.POWERTOOLS_SERVICE_NAME ?? settings.functionName,
        },
        feed: (sink) => {
          metricLines = sink;
        },
      }),
    async stop() {
      const stats = await esm.stop();
      await host.stop();
      return {
        runtime: 'event-source-mapping',
        esm: stats,
        function: { memorySizeMb: host.memorySizeMb, timeoutMs: host.timeoutMs, stats: { ...host.stats } },
      };
    },
  };
}
