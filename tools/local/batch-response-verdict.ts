import type { SQSRecord } from 'aws-lambda';

/** How Lambda's SQS event source mapping judges one invocation. */
export interface BatchResponseVerdict {
  /** `success`: delete every record; `partial-failure`: delete all but `failedMessageIds`; `batch-failure`: delete none. */
  readonly result: 'success' | 'partial-failure' | 'batch-failure';
  /** Message ids left on the queue (to reappear after their visibility timeout). */
  readonly failedMessageIds: readonly string[];
  /** Why the batch failed as a whole, when it did. Names the offending value, never a payload. */
  readonly reason?: string;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Applies Lambda's rules for a handler response with `ReportBatchItemFailures` enabled
 * (docs: "Handling errors for an SQS event source in Lambda", success and failure conditions):
 *
 * - complete success: a null/undefined (void) response, an empty object, or `batchItemFailures` that is
 *   empty, null or missing;
 * - complete failure: a response that is not a JSON object, `batchItemFailures` that is not a list, an item
 *   that is not an object, an `itemIdentifier` that is empty, null, missing (a bad key name) or not the id
 *   of a record in the batch;
 * - otherwise, exactly the listed records failed.
 *
 * Without `ReportBatchItemFailures` any response is a complete success (only a throw or a timeout fails).
 * Throws and timeouts are decided by the caller.
 */
export function batchResponseVerdict(
  response: unknown,
  records: readonly SQSRecord[],
  options: { reportBatchItemFailures?: boolean } = {},
): BatchResponseVerdict {
  const all = records.map((record) => record.messageId);
  const success: BatchResponseVerdict = { result: 'success', failedMessageIds: [] };
  if (options.reportBatchItemFailures === false || response === undefined || response === null)
    return success;
  const fail = (reason: string): BatchResponseVerdict => ({
    result: 'batch-failure',
    failedMessageIds: all,
    reason,
  });
  if (!isObject(response))
    return fail(
      `the response is not a JSON object (got ${Array.isArray(response) ? 'an array' : typeof response})`,
    );
  const items = response.batchItemFailures;
  if (items === undefined || items === null) return success;
  if (!Array.isArray(items)) return fail(`batchItemFailures is not a list (got ${typeof items})`);
  if (items.length === 0) return success;
  const ids = new Set(all);
  const failed = new Set<string>();
  for (const [index, item] of items.entries()) {
    if (!isObject(item)) return fail(`batchItemFailures[${index}] is not an object`);
    const id = item.itemIdentifier;
    if (id === undefined || id === null) {
      return fail(
        `batchItemFailures[${index}].itemIdentifier is ${id === null ? 'null' : 'missing (bad key name?)'}`,
      );
    }
    if (typeof id !== 'string' || id === '') {
      return fail(
        `batchItemFailures[${index}].itemIdentifier is ${id === '' ? 'an empty string' : `a ${typeof id}`}`,
      );
    }
    if (!ids.has(id))
      return fail(`batchItemFailures[${index}].itemIdentifier "${id}" is not a message of this batch`);
    failed.add(id);
  }
  return { result: 'partial-failure', failedMessageIds: all.filter((id) => failed.has(id)) };
}
