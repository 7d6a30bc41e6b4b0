import { startFunctionHost } from './function-host.ts';
import type { LocalStack } from './local-stack.ts';
import { startPollerTasks } from './poller-process.ts';
import { scenarioVariables } from './scenario-variables.ts';
import { localPollerTask, localWorkerFunction } from './stack-compute.ts';
import { startStackFunctionMapping } from './stack-function-mapping.ts';

/** Options of {@link keepConsuming}. */
export interface KeepConsumingOptions {
  readonly stack: LocalStack;
  /** Invocations (records in flight for the poller) at once. @default 4 */
  readonly concurrency?: number;
  /** What consumes the queue, as in the scenario. @default 'event-source-mapping' */
  readonly runtime?: 'event-source-mapping' | 'poller';
  /** `worker_inbox.consumer`. @default 'case-worker' */
  readonly consumer?: string;
  /** Overrides the stage's memory (the function's MB, or the task's MiB). */
  readonly memoryMb?: number;
  /** Each kill for memory or time (and each poller task that exited by itself), as AWS reports it. */
  readonly onKill?: (line: string) => void;
  /** Every line the worker writes, at INFO (the run's log file); without it the worker logs nothing. */
  readonly onLogLine?: (line: string) => void;
}

/** A worker consuming the local stack's queue until {@link KeptWorker.stop}. */
export interface KeptWorker {
  /** Stops receiving; records in flight settle first. */
  stop(): Promise<void>;
}

/**
 * The worker of `npm start -- --keep` once the scenario's summary is printed: the deployed worker entry (the example
 * domain's handlers, and the toolkit's canary, which every worker registers) on the stack's store, as the stage runs
 * it — the worker function behind the local event source mapping in a local function host, or the poller's task
 * (`bin/poller.ts`) — within its memory and timeout, with its role's key, so that what is sent to the queue while the
 * stack stays up — `sqs-worker smoke`, your own messages — is consumed. Its logs go to `onLogLine` (the run's log
 * file), never to the terminal (the summary stays readable);
 * the backoff is the scenario's short one (1 to 4 s), so a never-recovering message reaches the DLQ in seconds.
 */
export async function keepConsuming(options: KeepConsumingOptions): Promise<KeptWorker> {
  const { stack } = options;
  const concurrency = options.concurrency ?? 4;
  const consumer = options.consumer ?? 'case-worker';
  const poller = options.runtime === 'poller';
  const variables = {
    ...scenarioVariables(
      consumer,
      stack.databaseRoles?.url('worker') ?? stack.databaseUrl,
      poller ? 'poller' : 'event-source-mapping',
      concurrency,
    ),
    // Its lines go to the run's log file (onLogLine), not to the terminal.
    POWERTOOLS_LOG_LEVEL: options.onLogLine ? 'INFO' : 'SILENT',
  };
  const onOutput = options.onLogLine ? (line: string) => options.onLogLine?.(line) : undefined;
  if (poller) {
    const task = await localPollerTask(stack, {
      stage: stack.dynamodb ? 'fargate-dynamodb' : 'fargate',
      memoryMiB: options.memoryMb,
    });
    const tasks = await startPollerTasks({
      ...task,
      environment: { ...task.environment, ...variables },
      ...(onOutput ? { onOutput } : {}),
      onExit: (exit) => {
        if (exit.outOfMemory)
          options.onKill?.(
            `poller task ${exit.task} stopped: ${exit.stoppedReason} (exit code ${exit.exitCode}); a new task starts`,
          );
        else if (!exit.stopped)
          options.onKill?.(
            `poller task ${exit.task} exited by itself (exit code ${exit.exitCode}); a new task starts`,
          );
      },
    });
    return {
      async stop() {
        await tasks.stop();
      },
    };
  }
  const settings = await localWorkerFunction(stack, {
    stage: stack.dynamodb ? 'dev-dynamodb' : 'dev',
    memorySizeMb: options.memoryMb,
  });
  const host = await startFunctionHost({
    ...settings,
    environment: { ...settings.environment, ...variables },
    ...(onOutput ? { onOutput } : {}),
  });
  const esm = await startStackFunctionMapping({
    stack,
    host,
    functionName: settings.functionName,
    concurrency,
    onKill: options.onKill,
  });
  return {
    async stop() {
      await esm.stop().catch(() => undefined);
      await host.stop().catch(() => undefined);
    },
  };
}
