import type { BatchEngine } from '../../worker/batch-engine.ts';

export type { BatchBudget, BatchResult } from '../../worker/batch-engine.ts';

/**
 * The poller's one collaborator for the work itself: the runtime-neutral engine's `processBatch`
 * (`createBatchEngine`). It logs and meters every record, never throws for a record and never changes a message's
 * visibility: deleting, backing off and releasing are the runtime's job.
 *
 * @internal
 */
export type ProcessBatch = BatchEngine['processBatch'];
