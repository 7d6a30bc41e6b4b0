import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { WORKER_DEFAULTS } from '../constants.ts';
import { BatchFailedError } from '../errors.ts';
import { createBatchEngine, defaultWorkerLogger } from './batch-engine.ts';
import { sqsClientResolver } from './sqs-client-source.ts';
import type { WorkerOptions } from './worker-options.ts';

export type { WorkerOptions } from './worker-options.ts';

/** The Lambda handler returned by {@link createWorker}. */
export type WorkerHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

/**
 * Builds the Lambda SQS handler of a worker: exactly-once effects under at-least-once delivery.
 *
 * A thin adapter over the runtime-neutral core ({@link createBatchEngine}, which validates the options and
 * decides every record's outcome within the time the Lambda context has left). From the outcomes it builds
 * `batchItemFailures` (the records not acknowledged, in the batch's order); reported records get their
 * exponential backoff with jitter in one ChangeMessageVisibilityBatch; a batch in which every record failed
 * throws `BatchFailedError` so Lambda scales its poller down.
 *
 * @example
 * ```ts
 * const sql = createSql(config.database);
 * export const handler = createWorker({ consumer: 'case-worker', handlers: exampleHandlers, sql, sqs: new SQSClient({}) });
 * ```
 */
export function createWorker(options: WorkerOptions): WorkerHandler {
  const logger = options.logger ?? defaultWorkerLogger(options.consumer);
  const engine = createBatchEngine({ ...options, logger });
  const resolveSqs = sqsClientResolver(options.sqs, logger);

  return async function handler(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
    const records = event.Records ?? [];
    const arn = records[0]?.eventSourceARN ?? '';
    const { outcomes } = await engine.processBatch(records, {
      remainingMs: () => context.getRemainingTimeInMillis(),
    });
    const reported = outcomes.filter((outcome) => !outcome.acknowledged);
    const response: SQSBatchResponse = {
      batchItemFailures: reported.map((outcome) => ({ itemIdentifier: outcome.messageId })),
    };

    if (options.sqs && arn) {
      const receiptHandles = new Map(records.map((record) => [record.messageId, record.receiptHandle]));
      const changes = reported.flatMap((outcome) =>
        outcome.visibilitySeconds !== undefined
          ? [
              {
                messageId: outcome.messageId,
                receiptHandle: receiptHandles.get(outcome.messageId) ?? '',
                visibilitySeconds: outcome.visibilitySeconds,
              },
            ]
          : [],
      );
      if (changes.length > 0) {
        // Loaded on the first backoff only: the SQS client code is a chunk of its own in the bundle. Like a
        // failed visibility change, a module that cannot load is logged and changes no outcome.
        const [backoffModule, sqs] = await Promise.all([
          import('./apply-backoff.ts').catch((error: unknown) => {
            logger.warn('worker_backoff_unavailable', { error: String(error) });
            return undefined;
          }),
          resolveSqs(),
        ]);
        if (backoffModule && sqs) await backoffModule.applyBackoff(sqs, arn, changes, logger);
      }
    }

    // Every record failed: throw, so Lambda counts an error and scales the poller down. Records that are only
    // waiting — for their notBefore, or for a copy of the message in flight elsewhere (answered at once, see
    // claimInbox) — are not failures of this worker and never trigger it.
    const waiting = outcomes.some(
      (outcome) => outcome.result === 'NOT_YET_DUE' || outcome.failureCode === 'IN_PROGRESS_ELSEWHERE',
    );
    if (
      (options.failInvocationOnFullBatchFailure ?? WORKER_DEFAULTS.failInvocationOnFullBatchFailure) &&
      records.length > 0 &&
      reported.length === records.length &&
      !waiting
    ) {
      const codes = [...new Set(outcomes.map((outcome) => outcome.failureCode ?? outcome.result))];
      throw new BatchFailedError(
        records.map((record) => record.messageId),
        codes.join(', '),
      );
    }
    return response;
  };
}
