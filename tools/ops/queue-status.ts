import type postgres from 'postgres';
import type { Clock } from './clock.ts';
import type { SqsSender } from './collaborators.ts';
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
}

/**
 * `queue status`: source depth, in flight and delayed, DLQ depth, retention and redrive policy, and the age
 * of the oldest unfinished message. The queue itself is never received from (a status read must not raise
 * receive counts); SQS has no API for the age of the oldest queued message — that is the CloudWatch metric
 * `ApproximateAgeOfOldestMessage`, which the stack alarms on — so the age shown is the oldest unfinished
 * inbox row, which covers every message the worker has picked up at least once.
 */
export async function queueStatus(
  deps: { sqs: SqsSender; out: OpsOutput; clock: Clock; sql?: postgres.Sql },
  options: { queueUrl: string; dlqUrl?: string; consumer: string },
): Promise<QueueStatusResult> {
  const { sqs, out, clock, sql } = deps;
  const now = clock.now();
  const [source, dlq] = await Promise.all([
    readQueueAttributes(sqs, options.queueUrl),
    options.dlqUrl ? readQueueAttributes(sqs, options.dlqUrl) : Promise.resolve(null),
  ]);
  let oldestUnfinishedAgeSeconds: number | null = null;
  let oldestUnfinishedKey: string | null = null;
  if (sql) {
    const [oldest] = await sql<{ idempotencyKey: string; firstSeenAt: Date }[]>`
      select idempotency_key as "idempotencyKey", first_seen_at as "firstSeenAt"
      from worker_inbox
      where consumer = ${options.consumer} and status in ('RECEIVED', 'PROCESSING', 'FAILED_RETRYABLE')
      order by first_seen_at
      limit 1
    `;
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
      sql
        ? `Oldest unfinished message (inbox): ${
            oldestUnfinishedAgeSeconds === null
              ? 'none'
              : `${formatSeconds(oldestUnfinishedAgeSeconds)} (${oldestUnfinishedKey})`
          }`
        : 'Oldest unfinished message: pass --database-url / DATABASE_URL to read it from the inbox.',
      'Age of the oldest queued message: CloudWatch metric ApproximateAgeOfOldestMessage (alarmed by the stack).',
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
