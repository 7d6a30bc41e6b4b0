import {
  SendMessageBatchCommand,
  type SendMessageBatchCommandOutput,
  type SendMessageBatchRequestEntry,
} from '@aws-sdk/client-sqs';
import {
  formatTraceparent,
  parseXRayTraceHeader,
  TRACEPARENT_ATTRIBUTE,
  TRACEPARENT_ATTRIBUTE_BYTES,
  withParentId,
} from '../tracing/trace-context.ts';
import { fairQueueGroup, fifoMessageIds } from './fifo-message-ids.ts';
import type { ClaimedRow } from './outbox-sql.ts';
import { planSendBatches } from './plan-send-batches.ts';

/**
 * The one SQS call the relay makes. A real `SQSClient` fits; tests pass one that fails on purpose.
 *
 * @internal
 */
export interface OutboxSqsSender {
  send(command: SendMessageBatchCommand): Promise<SendMessageBatchCommandOutput>;
}

/**
 * What a row to send needs: its envelope and the trace it travels with (an outbox row of either store).
 *
 * @internal
 */
export type OutboxSendRow = Pick<ClaimedRow, 'envelope' | 'trace_header'>;

/**
 * What became of one row's send: its SQS message id, or the error (the SQS code and message, never the payload).
 *
 * @internal
 */
export interface SendOutcome<R extends OutboxSendRow = ClaimedRow> {
  readonly row: R;
  readonly messageId?: string;
  readonly error?: string;
}

const MAX_ERROR = 500;

const truncate = (text: string) => (text.length > MAX_ERROR ? `${text.slice(0, MAX_ERROR - 1)}…` : text);

/**
 * Sends a round's rows with SendMessageBatch, ≤ 10 entries and ≤ `maxBatchBytes` per call. A round holds at most one
 * row per aggregate, so its batches are independent and are sent concurrently. Each message carries the row's trace
 * (`AWSTraceHeader` and a `traceparent` message attribute, see docs/tracing.md); a FIFO queue gets
 * MessageGroupId = aggregateId and MessageDeduplicationId = the idempotency key; a standard queue gets MessageGroupId =
 * aggregateId only with `fairQueueGroups` (SQS fair queues).
 *
 * @internal
 */
export async function sendOutboxRows<R extends OutboxSendRow>(
  sqs: OutboxSqsSender,
  rows: readonly R[],
  target: { readonly queueUrl: string; readonly maxBatchBytes: number; readonly fairQueueGroups?: boolean },
): Promise<SendOutcome<R>[]> {
  const fifo = target.queueUrl.endsWith('.fifo');
  const groups = fifo ? fifoMessageIds : target.fairQueueGroups ? fairQueueGroup : () => ({});
  const entries = rows.map((row, index) => {
    const entry: SendMessageBatchRequestEntry = {
      Id: `m${index}`,
      MessageBody: JSON.stringify(row.envelope),
      ...groups(row.envelope),
      ...traceAttributes(row.trace_header),
    };
    return { row, entry };
  });
  const batches = planSendBatches(
    entries,
    ({ entry }) =>
      Buffer.byteLength(entry.MessageBody ?? '', 'utf8') +
      (entry.MessageAttributes ? TRACEPARENT_ATTRIBUTE_BYTES : 0),
    { maxBytes: target.maxBatchBytes },
  );
  const results = await Promise.all(batches.map((batch) => sendBatch(sqs, target.queueUrl, batch)));
  return results.flat();
}

/** One SendMessageBatch call; every entry's outcome, a failed call failing them all. */
async function sendBatch<R extends OutboxSendRow>(
  sqs: OutboxSqsSender,
  queueUrl: string,
  batch: { row: R; entry: SendMessageBatchRequestEntry }[],
): Promise<SendOutcome<R>[]> {
  let output: SendMessageBatchCommandOutput;
  try {
    output = await sqs.send(
      new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: batch.map((b) => b.entry) }),
    );
  } catch (error) {
    const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return batch.map(({ row }) => ({ row, error: truncate(`SendMessageBatch failed: ${text}`) }));
  }
  const ok = new Map((output.Successful ?? []).map((s) => [s.Id, s.MessageId]));
  const bad = new Map((output.Failed ?? []).map((f) => [f.Id, `${f.Code ?? 'Failed'}: ${f.Message ?? ''}`]));
  return batch.map(({ row, entry }) => {
    const messageId = ok.get(entry.Id);
    if (messageId) return { row, messageId };
    return {
      row,
      error: truncate(bad.get(entry.Id) ?? 'SendMessageBatch returned no result for this entry'),
    };
  });
}

/**
 * The trace of a row as the message carries it: the X-Ray header as the `AWSTraceHeader` system attribute (what
 * X-Ray and Lambda read; system attributes do not count toward the message size) and the same context as a W3C
 * `traceparent` message attribute (what OpenTelemetry consumers read, and what survives where system attributes
 * do not: a local emulator, a redrive that copies message attributes). Rows written before traces were recorded
 * have none and are sent without.
 */
function traceAttributes(
  header: string | null,
): Pick<SendMessageBatchRequestEntry, 'MessageSystemAttributes' | 'MessageAttributes'> {
  const context = parseXRayTraceHeader(header);
  if (!header || !context) return {};
  return {
    MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: header } },
    MessageAttributes: {
      [TRACEPARENT_ATTRIBUTE]: { DataType: 'String', StringValue: formatTraceparent(withParentId(context)) },
    },
  };
}
