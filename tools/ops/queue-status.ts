import type { Clock } from './clock.ts';
import type { SqsSender } from './collaborators.ts';
import { type CloudWatchReader, oldestMessageAgeSeconds } from './oldest-message-age.ts';
import type { OpsStore } from './ops-store.ts';
import type { OpsOutput } from './output.ts';
import { emit, formatSeconds, table } from './output.ts';
import type { QueueFacts } from './read-queue-attributes.ts';
import { readQueueAttributes } from './read-queue-attributes.ts';

/** Result of {@link queueStatus}. */
export interface QueueStatusResult {
  readonly at: string;
  readonly source: QueueFacts;
  readonly dlq: QueueFacts | null;
  /**
   * Age of the oldest message the worker has seen but not finished (inbox RECEIVED, PROCESSING or
   * FAILED_RETRYABLE), in seconds; null when none or no database was given.
   */
  readonly oldestUnfinishedAgeSeconds: number | null;
  readonly oldestUnfinishedKey: string | null;
  /**
   * Age of the oldest message in the source queue, in seconds, from CloudWatch
   * (`ApproximateAgeOfOldestMessage`); null without a CloudWatch client (local emulator) or datapoint.
   */
  readonly oldestMessageAgeSeconds: number | null;
}

/**
 * `queue status`: source depth, in flight and delayed, DLQ depth, retention and redrive policy, the age of
 * the oldest queued message and of the oldest unfinished one. The queue itself is never received from (a
 * status read must not raise receive counts). SQS has no API for the age of the oldest queued message: it is
 * read from the CloudWatch metric `ApproximateAgeOfOldestMessage` (the one the stack alarms on) when a
 * CloudWatch client is given (AWS); the oldest unfinished inbox row covers every message the worker has
 * picked up at least once, locally too, when the store reads it ({@link OpsStore.unfinishedInbox}).
 */
export async function queueStatus(
  deps: {
    sqs: SqsSender;
    out: OpsOutput;
    clock: Clock;
    store?: OpsStore | undefined;
    cloudWatch?: CloudWatchReader | undefined;
  },
  options: { queueUrl: string; dlqUrl?: string | undefined; consumer: string },
): Promise<QueueStatusResult> {
  const { sqs, out, clock } = deps;
  const unfinished = deps.store?.unfinishedInbox();
  const now = clock.now();
  const [source, dlq, oldestAge] = await Promise.all([
    readQueueAttributes(sqs, options.queueUrl),
    options.dlqUrl ? readQueueAttributes(sqs, options.dlqUrl) : Promise.resolve(null),
    deps.cloudWatch ? oldestMessageAgeSeconds(deps.cloudWatch, options.queueUrl, now) : Promise.resolve(null),
  ]);
  let oldestUnfinishedAgeSeconds: number | null = null;
  let oldestUnfinishedKey: string | null = null;
  if (unfinished) {
    const oldest = await unfinished.oldest(options.consumer);
    if (oldest) {
      oldestUnfinishedAgeSeconds = Math.max(
        0,
        Math.round((now.getTime() - oldest.firstSeenAt.getTime()) / 1000),
      );
      oldestUnfinishedKey = oldest.idempotencyKey;
    }
  }
  const result: QueueStatusResult = {
    at: now.toISOString(),
    source,
    dlq,
    oldestUnfinishedAgeSeconds,
    oldestUnfinishedKey,
    oldestMessageAgeSeconds: oldestAge,
  };
  emit(out, result, () => {
    const row = (name: string, q: QueueFacts) => [
      name,
      q.visible,
      q.inFlight,
      q.delayed,
      formatSeconds(q.retentionSeconds),
      q.maxReceiveCount ?? '-',
      q.queueUrl,
    ];
    const rows = [row('source', source)];
    if (dlq) rows.push(row('dlq', dlq));
    const lines = [
      table(['queue', 'visible', 'in flight', 'delayed', 'retention', 'maxReceiveCount', 'url'], rows),
      unfinished
        ? `Oldest unfinished message (inbox): ${
            oldestUnfinishedAgeSeconds === null
              ? 'none'
              : `${formatSeconds(oldestUnfinishedAgeSeconds)} (${oldestUnfinishedKey})`
          }`
        : 'Oldest unfinished message: pass --database-url / DATABASE_URL to read it from the inbox.',
      deps.cloudWatch
        ? `Age of the oldest queued message (CloudWatch ApproximateAgeOfOldestMessage): ${
            oldestAge === null ? 'no datapoint in the last 15 min' : formatSeconds(oldestAge)
          }`
        : 'Age of the oldest queued message: CloudWatch ApproximateAgeOfOldestMessage (not read against a local endpoint).',
    ];
    if (dlq && dlq.visible + dlq.inFlight > 0) {
      lines.push(
        `The DLQ holds ${dlq.visible + dlq.inFlight} message(s): run "sqs-worker dlq peek" (runbook: the DLQ has messages).`,
      );
    }
    return lines.join('\n');
  });
  return result;
}
