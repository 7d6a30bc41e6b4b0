import type postgres from 'postgres';
import { deleteCompletedInboxBatch } from '../../../../lambda/retention/purge-retention.ts';
import { checkInboxRetention, RetentionWindowError } from '../../../../lambda/retention/retention-guard.ts';
import type { Clock } from '../../clock.ts';
import type { SqsSender } from '../../collaborators.ts';
import { currentActor } from '../../current-actor.ts';
import { UsageError } from '../../errors.ts';
import type { InboxPurgeOptions, InboxPurgeResult } from '../../ops-store.ts';
import type { OpsOutput } from '../../output.ts';
import { emit } from '../../output.ts';
import { readQueueAttributes } from '../../read-queue-attributes.ts';
import { recordAudit } from './record-audit.ts';

/**
 * `inbox purge --older-than <duration>`: deletes COMPLETED inbox rows in batches (short transactions, no long
 * lock), only rows whose `completed_at` and `last_seen_at` are both before the cutoff.
 *
 * It refuses a window shorter than source retention + DLQ retention: a copy of a message can sit in the
 * queue and then in the DLQ that long, and if its inbox row were gone a later redrive would apply the effect
 * a second time. Retentions come from the queues' MessageRetentionPeriod unless given.
 *
 * @throws UsageError (exit 2) when the window is too short or a retention cannot be determined.
 */
export async function inboxPurge(
  deps: { sql: postgres.Sql; out: OpsOutput; clock: Clock; sqs?: SqsSender },
  options: InboxPurgeOptions,
): Promise<InboxPurgeResult> {
  const { sql, out, clock, sqs } = deps;
  const retention = async (given: number | undefined, url: string | undefined, which: 'source' | 'DLQ') => {
    if (given !== undefined) return given;
    const flag = which === 'source' ? '--queue-url / WORKER_QUEUE_URL' : '--dlq-url / WORKER_DLQ_URL';
    const retentionFlag = which === 'source' ? '--source-retention' : '--dlq-retention';
    if (!url || !sqs) {
      throw new UsageError(
        `inbox purge needs the ${which} queue's retention to check the window: pass ${flag} (read from its ` +
          `MessageRetentionPeriod) or ${retentionFlag} <duration>.`,
      );
    }
    return (await readQueueAttributes(sqs, url)).retentionSeconds;
  };
  const sourceRetentionSeconds = await retention(options.sourceRetentionSeconds, options.queueUrl, 'source');
  const dlqRetentionSeconds = await retention(options.dlqRetentionSeconds, options.dlqUrl, 'DLQ');
  // The guard the scheduled retention job uses too (lambda/retention/retention-guard.ts).
  try {
    checkInboxRetention(
      options.olderThanSeconds,
      { sourceRetentionSeconds, dlqRetentionSeconds },
      '--older-than',
    );
  } catch (error) {
    if (error instanceof RetentionWindowError) throw new UsageError(error.message, { cause: error });
    throw error;
  }
  const batchSize = options.batchSize ?? 1000;
  const now = clock.now();
  const cutoff = new Date(now.getTime() - options.olderThanSeconds * 1000);
  let deleted = 0;
  let batches = 0;
  if (options.dryRun) {
    const [row] = await sql<{ count: number }[]>`
      select count(*)::int as count from worker_inbox
      where consumer = ${options.consumer} and status = 'COMPLETED'
        and completed_at < ${cutoff} and last_seen_at < ${cutoff}
    `;
    deleted = row?.count ?? 0;
  } else {
    for (;;) {
      const result = await deleteCompletedInboxBatch(sql, options.consumer, cutoff, batchSize);
      batches += 1;
      deleted += result.count;
      if (result.count < batchSize) break;
    }
    await recordAudit(
      sql,
      {
        action: 'inbox_purge',
        outcome: 'DONE',
        consumer: options.consumer,
        detail: {
          cutoff: cutoff.toISOString(),
          olderThanSeconds: options.olderThanSeconds,
          deleted,
          batches,
          sourceRetentionSeconds,
          dlqRetentionSeconds,
        },
      },
      options.actor ?? currentActor(),
    );
  }
  const result: InboxPurgeResult = {
    consumer: options.consumer,
    cutoff: cutoff.toISOString(),
    olderThanSeconds: options.olderThanSeconds,
    sourceRetentionSeconds,
    dlqRetentionSeconds,
    dryRun: options.dryRun === true,
    deleted,
    batches,
  };
  emit(out, result, () =>
    options.dryRun
      ? `Dry run: ${deleted} COMPLETED row(s) of consumer ${options.consumer} finished before ${result.cutoff} would be deleted.`
      : `Deleted ${deleted} COMPLETED row(s) of consumer ${options.consumer} finished before ${result.cutoff} in ${batches} batch(es).`,
  );
  return result;
}
