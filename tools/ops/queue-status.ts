import type { Clock } from './clock.ts';
import type { SqsSender } from './collaborators.ts';
import { type DeployedVersion, type DeployedVersionSource, readDeployedVersion } from './deployed-version.ts';
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
  /**
   * The version of the deployed worker code (the `workerVersion` of its log lines): the function's `WORKER_VERSION`,
   * or the local stack's; null when no source was given or it names no function.
   */
  readonly workerVersion: DeployedVersion | null;
}

/**
 * `queue status`: source depth, in flight and delayed, DLQ depth, retention and redrive policy, the age of
 * the oldest queued message and of the oldest unfinished one. The queue itself is never received from (a
 * status read must not raise receive counts). SQS has no API for the age of the oldest queued message: it is
 * read from the CloudWatch metric `ApproximateAgeOfOldestMessage` (the one the stack alarms on) when a
 * CloudWatch client is given (AWS); the oldest unfinished inbox row covers every message the worker has
 * picked up at least once, locally too, when the store reads it ({@link OpsStore.unfinishedInbox}). The deployed
 * worker version (`version`) tells whether what is seen started with a deploy: it is the `workerVersion` of every
 * log line (`sqs-worker logs`).
 */
export async function queueStatus(
  deps: {
    sqs: SqsSender;
    out: OpsOutput;
    clock: Clock;
    store?: OpsStore | undefined;
    cloudWatch?: CloudWatchReader | undefined;
    /** Where the deployed worker version is read ({@link readDeployedVersion}); none: not shown. */
    version?: DeployedVersionSource | undefined;
  },
  options: { queueUrl: string; dlqUrl?: string | undefined; consumer: string },
): Promise<QueueStatusResult> {
  const { sqs, out, clock } = deps;
  const unfinished = deps.store?.unfinishedInbox();
  const now = clock.now();
  const [source, dlq, oldestAge, version] = await Promise.all([
    readQueueAttributes(sqs, options.queueUrl),
    options.dlqUrl ? readQueueAttributes(sqs, options.dlqUrl) : Promise.resolve(null),
    deps.cloudWatch ? oldestMessageAgeSeconds(deps.cloudWatch, options.queueUrl, now) : Promise.resolve(null),
    deps.version ? readDeployedVersion(deps.version) : Promise.resolve(undefined),
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
    workerVersion: version ?? null,
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
    lines.push(describeVersion(deps.version, version));
    if (dlq && dlq.visible + dlq.inFlight > 0) {
      lines.push(
        `The DLQ holds ${dlq.visible + dlq.inFlight} message(s): run "sqs-worker dlq peek" (runbook: the DLQ has messages).`,
      );
    }
    return lines.join('\n');
  });
  return result;
}

/** The line of the worker version: the version and where it was read, or what to pass to read it. */
function describeVersion(
  source: DeployedVersionSource | undefined,
  version: DeployedVersion | undefined,
): string {
  if (version) {
    const modified = version.lastModified ? `, last modified ${version.lastModified}` : '';
    return `Worker version: ${version.version} (${version.from}${modified})`;
  }
  if (source?.kind === 'local') {
    return 'Worker version: export SQS_WORKER_LOCAL_VERSION (npm start -- --keep prints it) to show it.';
  }
  return 'Worker version: pass --function-name (env WORKER_FUNCTION_NAME) or --mapping-uuid to read it from Lambda.';
}
