// TEMPORARY stand-in until the runtime-neutral engine (createBatchEngine) lands on main: wraps the Lambda handler.
import type { SQSRecord } from 'aws-lambda';
import { BatchFailedError } from '../errors.ts';
import { createWorker, type WorkerOptions } from '../worker/create-worker.ts';
import type { RecordOutcome } from '../worker/outcome.ts';
import type { BatchBudget, BatchResult } from './process-batch.ts';

/** @internal */
export function workerBatchAdapter(options: WorkerOptions) {
  const handler = createWorker({ ...options, failInvocationOnFullBatchFailure: false });
  return {
    async processBatch(records: readonly SQSRecord[], budget: BatchBudget): Promise<BatchResult> {
      const context = {
        getRemainingTimeInMillis: () => budget.remainingMs(),
        functionName: 'poller',
        awsRequestId: 'poller',
      } as never;
      let failed: Set<string>;
      try {
        const response = await handler({ Records: [...records] }, context);
        failed = new Set(response.batchItemFailures.map((item) => item.itemIdentifier));
      } catch (error) {
        if (!(error instanceof BatchFailedError)) throw error;
        failed = new Set(records.map((record) => record.messageId));
      }
      const outcomes: RecordOutcome[] = records.map((record) => ({
        messageId: record.messageId,
        result: failed.has(record.messageId) ? 'RETRYABLE_FAILURE' : 'COMPLETED',
        acknowledged: !failed.has(record.messageId),
        receiveCount: Number(record.attributes.ApproximateReceiveCount) || 1,
        processingMs: 0,
        dbTransactionMs: 0,
        messageAgeMs: 0,
      }));
      return { outcomes, databaseDown: false };
    },
  };
}
