import type { SQSRecord } from 'aws-lambda';
import type { RecordOutcome } from '../worker/outcome.ts';

/** The time a batch may take: milliseconds left before its records must have settled. */
export interface BatchBudget {
  remainingMs(): number;
}

/** What the engine decided for a batch: one outcome per record, in order. */
export interface BatchResult {
  readonly outcomes: readonly RecordOutcome[];
  /** A connection-class failure happened: the rest of the batch was reported without touching the database. */
  readonly databaseDown: boolean;
}

/**
 * The poller's one collaborator for the work itself: the runtime-neutral engine's `processBatch`. It logs and
 * meters every record, never throws for a record and never changes a message's visibility: deleting, backing
 * off and releasing are the runtime's job.
 */
export type ProcessBatch = (records: readonly SQSRecord[], budget: BatchBudget) => Promise<BatchResult>;
