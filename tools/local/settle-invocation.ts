import type { SQSClient } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import type { batchResponseVerdict } from './batch-response-verdict.ts';
import { countInvocation } from './count-invocation.ts';
import { deleteRecords } from './delete-records.ts';
import type {
  EventSourceMappingHooks,
  EventSourceMappingLogger,
  EventSourceMappingOptions,
  EventSourceMappingStats,
  InvocationReport,
} from './event-source-mapping.ts';
import { describeError, type InvocationEnding } from './run-invocation.ts';

/** The mapping's judgement of an invocation's response: which records failed, and why. @internal */
export type BatchVerdict = ReturnType<typeof batchResponseVerdict>;

/** What settling an invocation needs of its mapping. @internal */
export interface SettleContext {
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  readonly hooks: EventSourceMappingHooks;
  readonly stats: EventSourceMappingStats;
  readonly logger: EventSourceMappingLogger;
  readonly onInvocation: EventSourceMappingOptions['onInvocation'];
}

/**
 * Deletes what succeeded (but the deletes `dropDeleteAfterSuccess` skips), counts, logs and reports one
 * invocation.
 *
 * @internal
 */
export async function settleInvocation(
  context: SettleContext,
  records: readonly SQSRecord[],
  startedAt: number,
  awsRequestId: string,
  ended: InvocationEnding,
  verdict: BatchVerdict,
): Promise<void> {
  const { logger, stats } = context;
  let reason: InvocationReport['reason'] = ended.reason;
  let detail = ended.detail;
  if (!reason && verdict.result === 'batch-failure') {
    reason = 'invalid-response';
    detail = verdict.reason;
  }
  const failed = new Set(verdict.failedMessageIds);
  const succeeded = records.filter((record) => !failed.has(record.messageId));
  const toDelete = succeeded.filter((record) => !context.hooks.dropDeleteAfterSuccess?.(record));
  const deleted = await deleteRecords(context.sqs, context.queueUrl, toDelete, { stats, logger });
  const deletesDropped = succeeded.length - toDelete.length;
  countInvocation(stats, verdict.result, reason, {
    succeeded: succeeded.length,
    failed: failed.size,
    deleted,
    deletesDropped,
  });
  const report: InvocationReport = {
    awsRequestId,
    messageIds: records.map((record) => record.messageId),
    failedMessageIds: verdict.failedMessageIds,
    result: verdict.result,
    ...(reason ? { reason, detail } : {}),
    ...(ended.errorType ? { errorType: ended.errorType } : {}),
    ...(ended.function ? { function: ended.function } : {}),
    response: ended.response,
    deleted,
    deletesDropped,
    startedAt,
    durationMs: Date.now() - startedAt,
  };
  const log = reason ? logger.warn : logger.debug;
  log.call(logger, 'Invocation finished', {
    awsRequestId,
    records: records.length,
    result: verdict.result,
    failed: failed.size,
    reason,
    detail,
    durationMs: report.durationMs,
  });
  try {
    context.onInvocation?.(report);
  } catch (error) {
    logger.error('onInvocation listener threw', { error: describeError(error) });
  }
}
