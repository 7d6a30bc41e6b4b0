import { ChangeMessageVisibilityBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { METRIC_NAMES } from '../../constants.ts';
import { SQS_MAX_VISIBILITY_SECONDS, VISIBILITY_LIMIT_MARGIN_SECONDS } from './constants.ts';
import { describeError, type PollerLogger, type PollerMetrics } from './poller-telemetry.ts';

/** Settings and collaborators of {@link createLeaseHeartbeat}. */
export interface LeaseHeartbeatOptions {
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  /** The lease of a receive (its VisibilityTimeout), in seconds; renewed at half. */
  readonly leaseSeconds: number;
  /** The most the heartbeat extends one message in total, beyond its first lease, in seconds. */
  readonly maxExtensionSeconds: number;
  readonly logger: PollerLogger;
  readonly metrics: PollerMetrics;
  /** Clock (epoch ms). @default Date.now */
  readonly now?: () => number;
  /** Called with the ids of the messages of each successful extension (tests, the local runtime). */
  readonly onExtended?: (messageIds: readonly string[], visibilitySeconds: number) => void;
}

/** The messages of one received batch under the heartbeat, returned by {@link LeaseHeartbeat.hold}. */
export interface HeldBatch {
  /** Epoch ms after which the heartbeat can no longer hold the batch's messages (its budget). */
  readonly holdUntil: number;
  /** The record settled: it is never extended again (its backoff, if any, is the runtime's to set). */
  settle(messageId: string): void;
  /** Stops the heartbeat of the batch and waits for an extension in flight, so nothing lands after this. */
  stop(): Promise<void>;
}

/** Renews the leases of the records still running. */
export interface LeaseHeartbeat {
  /**
   * Starts holding `records`, received at `receivedAt`. Every half lease, `beforeRenewal` runs first (the runtime
   * settles what is ready, so a settled record's lease never lapses), then the records still running get a new
   * lease with one ChangeMessageVisibilityBatch.
   */
  hold(records: readonly SQSRecord[], receivedAt: number, beforeRenewal?: () => Promise<void>): HeldBatch;
  /** Stops every batch's heartbeat (a stop that gave up waiting). */
  stopAll(): void;
}

/**
 * The poller's heartbeat. A record still running at half its lease gets a new lease (`leaseSeconds` from now),
 * never beyond `maxExtensionSeconds` of extensions in total nor SQS's 12-hour limit (less a minute); the extension
 * stops the moment the record settles, so a failed record's backoff visibility is never overwritten: the runtime
 * sets it only after {@link HeldBatch.stop} (or after a renewal, in `beforeRenewal`). Every extension is logged
 * (`poller_visibility_extended`) and counted (`PollerHeartbeats`, one per message).
 *
 * @internal
 */
export function createLeaseHeartbeat(options: LeaseHeartbeatOptions): LeaseHeartbeat {
  const now = options.now ?? Date.now;
  const { leaseSeconds, logger } = options;
  const intervalMs = (leaseSeconds * 1000) / 2;
  const stops = new Set<() => void>();

  return {
    hold(records, receivedAt, beforeRenewal) {
      const holdUntil =
        receivedAt +
        1000 *
          Math.min(
            leaseSeconds + options.maxExtensionSeconds,
            SQS_MAX_VISIBILITY_SECONDS - VISIBILITY_LIMIT_MARGIN_SECONDS,
          );
      const running = new Map(records.map((record) => [record.messageId, record]));
      let timer: NodeJS.Timeout | undefined;
      let inFlight: Promise<void> = Promise.resolve();
      let stopped = false;

      const renew = async (): Promise<void> => {
        await beforeRenewal?.();
        if (stopped || running.size === 0) return;
        const seconds = Math.min(leaseSeconds, Math.floor((holdUntil - now()) / 1000));
        const due = [...running.values()];
        if (seconds < 1) {
          logger.warn('poller_heartbeat_limit_reached', {
            messageIds: due.map((record) => record.messageId),
            heldSeconds: Math.round((now() - receivedAt) / 1000),
          });
          running.clear();
          return;
        }
        for (let i = 0; i < due.length; i += 10) {
          await extendChunk(options, due.slice(i, i + 10), { seconds, receivedAt, now });
        }
      };
      const schedule = () => {
        timer = setTimeout(() => {
          inFlight = renew()
            .catch(() => {})
            .finally(() => {
              if (!stopped) schedule();
            });
        }, intervalMs);
      };
      const stop = () => {
        stopped = true;
        clearTimeout(timer);
        stops.delete(stop);
      };
      stops.add(stop);
      schedule();
      return {
        holdUntil,
        settle(messageId) {
          running.delete(messageId);
        },
        async stop() {
          stop();
          await inFlight;
        },
      };
    },
    stopAll() {
      for (const stop of [...stops]) stop();
    },
  };
}

/** One ChangeMessageVisibilityBatch of up to 10 running records: each extension logged and counted, each failure logged. */
async function extendChunk(
  options: LeaseHeartbeatOptions,
  chunk: readonly SQSRecord[],
  lease: { seconds: number; receivedAt: number; now: () => number },
): Promise<void> {
  const { sqs, queueUrl, logger, metrics } = options;
  const { seconds, receivedAt, now } = lease;
  try {
    const response = await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queueUrl,
        Entries: chunk.map((record, index) => ({
          Id: String(index),
          ReceiptHandle: record.receiptHandle,
          VisibilityTimeout: seconds,
        })),
      }),
    );
    const failed = new Set((response.Failed ?? []).map((entry) => Number(entry.Id)));
    for (const entry of response.Failed ?? []) {
      logger.warn('poller_visibility_extension_failed', {
        messageId: chunk[Number(entry.Id)]?.messageId,
        code: entry.Code,
      });
    }
    const extended = chunk.filter((_, index) => !failed.has(index)).map((record) => record.messageId);
    if (extended.length === 0) return;
    logger.info('poller_visibility_extended', {
      messageIds: extended,
      visibilitySeconds: seconds,
      heldSeconds: Math.round((now() - receivedAt) / 1000),
    });
    metrics.addMetric(METRIC_NAMES.pollerHeartbeats, 'Count', extended.length);
    metrics.publishStoredMetrics();
    options.onExtended?.(extended, seconds);
  } catch (error) {
    logger.warn('poller_visibility_extension_failed', {
      messageIds: chunk.map((record) => record.messageId),
      error: describeError(error),
    });
  }
}
