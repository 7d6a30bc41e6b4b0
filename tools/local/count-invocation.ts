import type { EventSourceMappingStats, InvocationReport } from './event-source-mapping.ts';

/**
 * The stats of a mapping that has done nothing yet.
 *
 * @internal
 */
export function emptyStats(): EventSourceMappingStats {
  return {
    receives: 0,
    receiveErrors: 0,
    messagesReceived: 0,
    invocations: 0,
    succeededInvocations: 0,
    partialFailures: 0,
    errors: 0,
    timeouts: 0,
    outOfMemory: 0,
    invalidResponses: 0,
    recordsSucceeded: 0,
    recordsFailed: 0,
    deleted: 0,
    deletesDropped: 0,
    deleteFailures: 0,
    inFlightInvocations: 0,
    maxObservedConcurrency: 0,
  };
}

/**
 * Adds one settled invocation (its result, reason and record counts) to the stats; it is no longer in flight.
 *
 * @internal
 */
export function countInvocation(
  stats: EventSourceMappingStats,
  result: InvocationReport['result'],
  reason: InvocationReport['reason'],
  records: { succeeded: number; failed: number; deleted: number; deletesDropped: number },
): void {
  stats.inFlightInvocations -= 1;
  stats.recordsSucceeded += records.succeeded;
  stats.recordsFailed += records.failed;
  stats.deleted += records.deleted;
  stats.deletesDropped += records.deletesDropped;
  if (result === 'success') stats.succeededInvocations += 1;
  if (result === 'partial-failure') stats.partialFailures += 1;
  if (reason === 'error') stats.errors += 1;
  if (reason === 'timeout') stats.timeouts += 1;
  if (reason === 'out-of-memory') stats.outOfMemory += 1;
  if (reason === 'invalid-response') stats.invalidResponses += 1;
}
