import {
  BatchProcessor,
  EventType,
  processPartialResponse,
  SqsFifoPartialProcessorAsync,
} from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { WORKER_DEFAULTS } from '../../constants.ts';
import { BatchFailedError } from '../../errors.ts';
import { sqsClientResolver } from '../../sqs/sqs-client-source.ts';
import type { DynamoStore } from '../../stores/dynamodb/dynamo-store.ts';
import { type BatchEngine, defaultWorkerLogger } from '../../worker/batch-engine.ts';
import { createBatchEngine, createStoreBatchEngine } from '../create-batch-engine.ts';
import type { WorkerOptions } from '../worker-options.ts';

export type { WorkerOptions } from '../worker-options.ts';

/** The Lambda handler returned by {@link createWorker}. */
export type WorkerHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

/**
 * Builds the Lambda SQS handler of a worker: exactly-once effects under at-least-once delivery.
 *
 * A thin adapter over the runtime-neutral core ({@link createBatchEngine}, which validates the options and
 * decides every record's outcome within the time the Lambda context has left). Powertools' batch processor
 * (`SqsFifoPartialProcessorAsync` for `.fifo` queues) turns the outcomes into the partial batch response: the
 * records not acknowledged are its `batchItemFailures`, in the batch's order. Reported records get their
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
  return lambdaHandler(createBatchEngine({ ...options, logger }), { ...options, logger });
}

/**
 * {@link createWorker} for options that give their `store`, without referring to the PostgreSQL store: the DynamoDB
 * worker's bundle leaves its code out (`createStoreBatchEngine`).
 *
 * @internal
 */
export function createStoreWorker(options: WorkerOptions & { readonly store: DynamoStore }): WorkerHandler {
  const logger = options.logger ?? defaultWorkerLogger(options.consumer);
  return lambdaHandler(createStoreBatchEngine({ ...options, logger }), { ...options, logger });
}

/** The Lambda handler of an engine: its outcomes as the partial batch response, the backoffs, the full-batch rule. */
function lambdaHandler(
  engine: BatchEngine,
  options: WorkerOptions & { readonly logger: NonNullable<WorkerOptions['logger']> },
): WorkerHandler {
  const { logger } = options;
  const resolveSqs = sqsClientResolver(options.sqs, logger);

  return async function handler(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
    const records = event.Records ?? [];
    const arn = records[0]?.eventSourceARN ?? '';
    const { outcomes } = await engine.processBatch(records, {
      remainingMs: () => context.getRemainingTimeInMillis(),
    });
    const reported = outcomes.filter((outcome) => !outcome.acknowledged);
    const response = await partialResponse(
      event,
      context,
      new Set(reported.map((outcome) => outcome.messageId)),
    );

    if (options.sqs && arn) {
      const receiptHandles = new Map(records.map((record) => [record.messageId, record.receiptHandle]));
      const changes = reported.flatMap((outcome) =>
        outcome.visibilitySeconds !== undefined
          ? [
              {
                messageId: outcome.messageId,
                receiptHandle: receiptHandles.get(outcome.messageId) ?? '',
                visibilitySeconds: outcome.visibilitySeconds,
                traceId: outcome.traceId,
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

/** Settled by the engine, not acknowledged: Powertools reports the record in `batchItemFailures`. */
class RecordNotAcknowledged extends Error {}

/**
 * The partial batch response of records the engine already settled: Powertools' processor of the queue's kind
 * reports every record in `reported`. The engine decided FIFO order and group blocking. Kept for one thing: the FIFO
 * processor's own skip of a failed group's later members is a second guard of SQS FIFO order (such a record is
 * reported even if the engine had acknowledged it).
 */
function partialResponse(
  event: SQSEvent,
  context: Context,
  reported: ReadonlySet<string>,
): Promise<SQSBatchResponse> {
  if ((event.Records ?? []).length === 0) return Promise.resolve({ batchItemFailures: [] });
  const settle = async (record: SQSRecord) => {
    if (reported.has(record.messageId)) throw new RecordNotAcknowledged(record.messageId);
  };
  const fifo = event.Records[0]?.eventSourceARN?.endsWith('.fifo') === true;
  return fifo
    ? processPartialResponse(event, settle, new SqsFifoPartialProcessorAsync(), {
        context,
        skipGroupOnError: true,
        throwOnFullBatchFailure: false,
      })
    : processPartialResponse(event, settle, new BatchProcessor(EventType.SQS), {
        context,
        throwOnFullBatchFailure: false,
      });
}
