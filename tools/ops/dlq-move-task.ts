import type { ListMessageMoveTasksResultEntry } from '@aws-sdk/client-sqs';
import {
  CancelMessageMoveTaskCommand,
  ListMessageMoveTasksCommand,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import type { SqsSender } from './collaborators.ts';
import { currentActor } from './current-actor.ts';
import { OperationError } from './errors.ts';
import type { AuditTrail, OpsStore } from './ops-store.ts';
import type { OpsOutput } from './output.ts';
import { emit, table } from './output.ts';
import { readQueueAttributes } from './read-queue-attributes.ts';

/** A move task as `dlq move-task status` reports it. */
export interface MoveTask {
  readonly taskHandle: string | null;
  readonly status: string | null;
  readonly sourceArn: string | null;
  readonly destinationArn: string | null;
  readonly maxNumberOfMessagesPerSecond: number | null;
  readonly approximateNumberOfMessagesMoved: number | null;
  readonly approximateNumberOfMessagesToMove: number | null;
  readonly failureReason: string | null;
  readonly startedAt: string | null;
}

/** Result of {@link dlqMoveTask}. */
export type DlqMoveTaskResult =
  | {
      readonly action: 'start';
      readonly taskHandle: string;
      readonly sourceArn: string;
      readonly destinationArn: string | null;
      readonly ratePerSecond: number;
    }
  | { readonly action: 'status'; readonly sourceArn: string; readonly tasks: MoveTask[] }
  | {
      readonly action: 'cancel';
      readonly taskHandle: string;
      readonly approximateNumberOfMessagesMoved: number | null;
    };

/** Options of {@link dlqMoveTask}. */
export type DlqMoveTaskOptions = {
  readonly dlqUrl: string;
  readonly consumer: string;
  readonly actor?: string;
} & (
  | {
      readonly action: 'start';
      /** MaxNumberOfMessagesPerSecond of the task (SQS allows 1–500). */
      readonly ratePerSecond: number;
      /** Move to this queue instead of each message's original source queue. */
      readonly destinationUrl?: string;
    }
  | { readonly action: 'status' }
  | {
      readonly action: 'cancel';
      /** Task to cancel; by default the DLQ's RUNNING task. */
      readonly taskHandle?: string;
    }
);

const toTask = (entry: ListMessageMoveTasksResultEntry): MoveTask => ({
  taskHandle: entry.TaskHandle ?? null,
  status: entry.Status ?? null,
  sourceArn: entry.SourceArn ?? null,
  destinationArn: entry.DestinationArn ?? null,
  maxNumberOfMessagesPerSecond: entry.MaxNumberOfMessagesPerSecond ?? null,
  approximateNumberOfMessagesMoved: entry.ApproximateNumberOfMessagesMoved ?? null,
  approximateNumberOfMessagesToMove: entry.ApproximateNumberOfMessagesToMove ?? null,
  failureReason: entry.FailureReason ?? null,
  startedAt: entry.StartedTimestamp ? new Date(entry.StartedTimestamp).toISOString() : null,
});

async function arnOf(sqs: SqsSender, queueUrl: string): Promise<string> {
  const facts = await readQueueAttributes(sqs, queueUrl);
  if (!facts.queueArn)
    throw new OperationError(`SQS returned no QueueArn for ${queueUrl}; check the queue URL.`);
  return facts.queueArn;
}

/** What each action of {@link dlqMoveTask} works with. */
interface MoveTaskRun {
  readonly sqs: SqsSender;
  readonly out: OpsOutput;
  readonly audit: AuditTrail | undefined;
  readonly actor: string;
  readonly sourceArn: string;
  /** Runs an SQS call, turning its failure into an OperationError naming the call and the DLQ. */
  call<T>(what: string, run: () => Promise<T>): Promise<T>;
}

/**
 * `dlq move-task start|status|cancel`: SQS's own server-side DLQ redrive (StartMessageMoveTask,
 * ListMessageMoveTasks, CancelMessageMoveTask) with a rate limit. Use it for large DLQs once `dlq redrive`
 * of a few messages has shown the fix works; it moves everything, with no filter and no per-message audit.
 * Starting and cancelling are recorded in the store's audit trail when it keeps one ({@link OpsStore.auditTrail}).
 *
 * @throws OperationError (exit 1) when SQS refuses, with its reason (a task already running, no permission).
 */
export async function dlqMoveTask(
  deps: { sqs: SqsSender; out: OpsOutput; store?: OpsStore | undefined },
  options: DlqMoveTaskOptions,
): Promise<DlqMoveTaskResult> {
  const { sqs, out } = deps;
  const audit = deps.store?.auditTrail();
  const actor = options.actor ?? currentActor();
  const sourceArn = await arnOf(sqs, options.dlqUrl);
  const run: MoveTaskRun = {
    sqs,
    out,
    audit,
    actor,
    sourceArn,
    async call(what, send) {
      try {
        return await send();
      } catch (error) {
        throw new OperationError(
          `${what} failed for ${sourceArn}: ${(error as Error).name}: ${(error as Error).message}`,
          { cause: error },
        );
      }
    },
  };
  if (options.action === 'start') return startTask(run, options);
  if (options.action === 'status') return taskStatus(run);
  return cancelTask(run, options);
}

async function startTask(
  run: MoveTaskRun,
  options: DlqMoveTaskOptions & { readonly action: 'start' },
): Promise<DlqMoveTaskResult> {
  const { sqs, sourceArn } = run;
  const destinationArn = options.destinationUrl ? await arnOf(sqs, options.destinationUrl) : undefined;
  const response = await run.call('StartMessageMoveTask', () =>
    sqs.send(
      new StartMessageMoveTaskCommand({
        SourceArn: sourceArn,
        DestinationArn: destinationArn,
        MaxNumberOfMessagesPerSecond: options.ratePerSecond,
      }),
    ),
  );
  const taskHandle = response.TaskHandle ?? '';
  await run.audit?.record(
    {
      action: 'dlq_move_task_start',
      outcome: 'DONE',
      consumer: options.consumer,
      sourceQueue: options.dlqUrl,
      targetQueue: options.destinationUrl,
      detail: {
        taskHandle,
        ratePerSecond: options.ratePerSecond,
        destinationArn: destinationArn ?? 'original source',
      },
    },
    run.actor,
  );
  const result: DlqMoveTaskResult = {
    action: 'start',
    taskHandle,
    sourceArn,
    destinationArn: destinationArn ?? null,
    ratePerSecond: options.ratePerSecond,
  };
  emit(run.out, result, () =>
    [
      `Started a move task from ${sourceArn} to ${destinationArn ?? 'each message’s original source queue'} at ≤ ${options.ratePerSecond} messages/s.`,
      `Task handle: ${taskHandle}`,
      'Follow it with "sqs-worker dlq move-task status"; stop it with "sqs-worker dlq move-task cancel".',
    ].join('\n'),
  );
  return result;
}

async function taskStatus(run: MoveTaskRun): Promise<DlqMoveTaskResult> {
  const { sqs, sourceArn } = run;
  const response = await run.call('ListMessageMoveTasks', () =>
    sqs.send(new ListMessageMoveTasksCommand({ SourceArn: sourceArn, MaxResults: 10 })),
  );
  const tasks = (response.Results ?? []).map(toTask);
  const result: DlqMoveTaskResult = { action: 'status', sourceArn, tasks };
  emit(run.out, result, () =>
    tasks.length === 0
      ? `No move tasks for ${sourceArn}.`
      : table(
          ['status', 'moved', 'to move', 'rate/s', 'started', 'failure', 'task handle'],
          tasks.map((t) => [
            t.status,
            t.approximateNumberOfMessagesMoved,
            t.approximateNumberOfMessagesToMove,
            t.maxNumberOfMessagesPerSecond,
            t.startedAt,
            t.failureReason,
            t.taskHandle,
          ]),
        ),
  );
  return result;
}

async function cancelTask(
  run: MoveTaskRun,
  options: DlqMoveTaskOptions & { readonly action: 'cancel' },
): Promise<DlqMoveTaskResult> {
  const { sqs, sourceArn } = run;
  let taskHandle = options.taskHandle;
  if (!taskHandle) {
    const response = await run.call('ListMessageMoveTasks', () =>
      sqs.send(new ListMessageMoveTasksCommand({ SourceArn: sourceArn, MaxResults: 10 })),
    );
    taskHandle = response.Results?.find((task) => task.Status === 'RUNNING')?.TaskHandle;
    if (!taskHandle) {
      throw new OperationError(
        `No RUNNING move task for ${sourceArn}; nothing to cancel ("dlq move-task status" lists them).`,
      );
    }
  }
  const handle = taskHandle;
  const response = await run.call('CancelMessageMoveTask', () =>
    sqs.send(new CancelMessageMoveTaskCommand({ TaskHandle: handle })),
  );
  await run.audit?.record(
    {
      action: 'dlq_move_task_cancel',
      outcome: 'DONE',
      consumer: options.consumer,
      sourceQueue: options.dlqUrl,
      detail: {
        taskHandle: handle,
        approximateNumberOfMessagesMoved: response.ApproximateNumberOfMessagesMoved ?? null,
      },
    },
    run.actor,
  );
  const result: DlqMoveTaskResult = {
    action: 'cancel',
    taskHandle: handle,
    approximateNumberOfMessagesMoved: response.ApproximateNumberOfMessagesMoved ?? null,
  };
  emit(
    run.out,
    result,
    () =>
      `Cancelled move task ${handle}; about ${result.approximateNumberOfMessagesMoved ?? '?'} message(s) had moved.`,
  );
  return result;
}
