import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { CommitMode } from '../../lambda/types.ts';
import { createLocalQueues } from '../local/local-queues.ts';
import { caseIds, chunk, deadlineRecords } from './bench-messages.ts';
import type { QueueRig } from './queue-rig.ts';
import { openWindow, type WindowFigures } from './queue-window.ts';
import { percentile } from './statistics.ts';

/** What a consumer under test is started with. */
export interface SideInput {
  readonly rig: QueueRig;
  readonly queueUrl: string;
  /** The inbox consumer of its rows (a fresh one per run). */
  readonly consumer: string;
  /** Records in flight at most. */
  readonly concurrency: number;
  readonly commitMode: CommitMode;
  /** Messages it received (by SQS message id). */
  onReceived(messageIds: readonly string[]): void;
  /** Messages it deleted after their commit. */
  onDeleted(messageIds: readonly string[]): void;
}

/** A consumer under test: this project's poller, or a peer built on another library. */
export interface ConsumerSide {
  readonly name: string;
  start(input: SideInput): Promise<{ stop(): Promise<void> }>;
}

/** One run's plan: records in flight, the commit mode, warm-up and measured messages. */
export interface QueueRunPlan {
  readonly concurrency: number;
  readonly commitMode: CommitMode;
  readonly warmupMessages: number;
  readonly messages: number;
}

/** One run's figures: the window's, with the record times of its messages (receive to delete). */
export interface QueueRunFigures extends WindowFigures {
  readonly side: string;
  readonly plan: QueueRunPlan;
  readonly messagesPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** No message deleted for this long: the run is stuck (a failing handler, a wrong endpoint). */
const STALL_MS = 30_000;

/**
 * One run of `side` on a fresh queue: its cases created, `warmupMessages + messages` deadline messages sent straight
 * to the emulator (never counted), then the side started; the window opens once the warm-up's messages are
 * deleted (pools open, code warm) and closes when every message is, so its time, calls and round trips are the
 * measured messages'. A record's time runs from its receive to its delete.
 */
export async function runQueueSide(
  rig: QueueRig,
  side: ConsumerSide,
  plan: QueueRunPlan,
): Promise<QueueRunFigures> {
  const run = `${side.name.replace(/[^a-z0-9]+/gi, '-')}-${randomBytes(3).toString('hex')}`;
  const total = plan.warmupMessages + plan.messages;
  const prefix = `bench-queue-${run}`;
  await rig.admin`
    insert into cases (case_id, stage, version)
    select case_id, 'INVESTIGATION', 1 from unnest(${rig.admin.array(caseIds(prefix, total))}::text[]) as case_id
  `;
  await rig.admin`vacuum analyze worker_inbox, cases, case_deadlines`;
  const client = rig.sqs.client();
  const { queueUrl } = await createLocalQueues(client, {
    name: `bench-${run}`,
    visibilityTimeoutSeconds: 30,
  });
  for (const batch of chunk(deadlineRecords(prefix, total), 10)) {
    const Entries = batch.map((record, index) => ({ Id: String(index), MessageBody: record.body }));
    await client.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries }));
  }
  const receivedAt = new Map<string, number>();
  const deleted = new Set<string>();
  const recordMs: number[] = [];
  let measuring = false;
  let lastProgress = performance.now();
  const progress = waiters();
  const started = await side.start({
    rig,
    queueUrl,
    consumer: `bench-queue-${run}`,
    concurrency: plan.concurrency,
    commitMode: plan.commitMode,
    onReceived(ids) {
      const now = performance.now();
      for (const id of ids) if (!receivedAt.has(id)) receivedAt.set(id, now);
    },
    onDeleted(ids) {
      const now = performance.now();
      lastProgress = now;
      for (const id of ids) {
        if (deleted.has(id)) continue;
        deleted.add(id);
        if (measuring) recordMs.push(now - (receivedAt.get(id) ?? now));
      }
      progress.check(deleted.size);
    },
  });
  const stalled = () => performance.now() - lastProgress > STALL_MS;
  try {
    await progress.until(plan.warmupMessages, stalled, side.name);
    const window = await openWindow(rig);
    measuring = true;
    await progress.until(total, stalled, side.name);
    const figures = await window.close();
    return {
      ...figures,
      side: side.name,
      plan,
      messagesPerSecond: (deleted.size - plan.warmupMessages) / figures.seconds,
      p50Ms: percentile(recordMs, 50),
      p99Ms: percentile(recordMs, 99),
    };
  } finally {
    await started.stop();
  }
}

/** Waits for a count to reach thresholds, checked on every change and every 250 ms (for a stall). */
function waiters() {
  const pending = new Set<{ at: number; resolve: () => void }>();
  let count = 0;
  return {
    check(now: number) {
      count = now;
      for (const waiter of [...pending]) {
        if (count >= waiter.at) {
          pending.delete(waiter);
          waiter.resolve();
        }
      }
    },
    async until(at: number, stalled: () => boolean, name: string): Promise<void> {
      if (count >= at) return;
      let timer: NodeJS.Timeout | undefined;
      try {
        await new Promise<void>((resolve, reject) => {
          pending.add({ at, resolve });
          timer = setInterval(() => {
            if (stalled()) {
              reject(
                new Error(
                  `${name}: ${count} of ${at} messages deleted, none for ${STALL_MS / 1000} s; is a handler failing (see the log) or an endpoint wrong?`,
                ),
              );
            }
          }, 250);
        });
      } finally {
        clearInterval(timer);
      }
    },
  };
}
