import pLimit from 'p-limit';
import { classifyError } from './classify-error.ts';
import type { BatchRecord, BatchState, RecordProcessor } from './commit-strategy.ts';
import type { DeadlineGuard } from './deadline-guard.ts';
import { HANDLER_MARGIN_MS } from './deadline-margins.ts';
import { type RecordOutcome, recordOutcome, unstartedFacts, verdicts } from './outcome.ts';

/**
 * How {@link scheduleRecords} runs a batch.
 *
 * @internal
 */
export interface ScheduleOptions {
  /** `.fifo` queue: one record at a time, per group in order, a group stopped at its first failure. */
  readonly fifo: boolean;
  /** Records at once (1: one after another). Ignored for FIFO. */
  readonly concurrency: number;
  readonly guard: DeadlineGuard;
  readonly state: BatchState;
  /** Called with each outcome as it is set (the engine passes `onRecordSettled` in `per-message` mode). */
  readonly onSettled?: (outcome: RecordOutcome) => void;
}

/**
 * Runs `process` over a batch's records and sets every record's outcome in `outcomes` (by SQS messageId) as it
 * settles. Before a record starts, the deadline guard decides whether there is time left for it: when not, it is
 * `DEADLINE_DEFERRED` (reported, visible again at once) — the guard is what a record needs; its handler gets the
 * time left less what settling it takes. Each record that ran is offered to the guard with the time it had
 * (`deadline-guard.ts` leaves out the ones a deadline cut).
 *
 * FIFO: SQS delivers nothing more of a message group while one of its messages is in flight, and a group must be
 * processed in order. Records run one at a time; after a group's first record that is not acknowledged, its later
 * records are not run: they get `FIFO_GROUP_BLOCKED` with the visibility of the failure that blocked them, so the
 * group comes back together, in order. Other groups go on.
 *
 * Never throws: a processor that throws (it must not) gives its record a retryable outcome.
 *
 * @internal
 */
export async function scheduleRecords(
  records: readonly BatchRecord[],
  process: RecordProcessor,
  outcomes: Map<string, RecordOutcome>,
  options: ScheduleOptions,
): Promise<void> {
  const { guard, state } = options;
  const settle = (outcome: RecordOutcome) => {
    outcomes.set(outcome.messageId, outcome);
    options.onSettled?.(outcome);
  };
  const runOne = async (item: BatchRecord): Promise<RecordOutcome> => {
    const leftMs = state.remainingMs() - HANDLER_MARGIN_MS;
    const guardMs = guard.guardMs();
    if (leftMs < guardMs) {
      return recordOutcome(
        unstartedFacts(item.record, item.receiveCount),
        verdicts.deadlineDeferred(leftMs, guardMs),
      );
    }
    let outcome: RecordOutcome;
    try {
      outcome = await process(item);
    } catch (error) {
      const failure = classifyError(error);
      return recordOutcome(
        unstartedFacts(item.record, item.receiveCount),
        verdicts.retryable(failure, undefined),
      );
    }
    guard.observe({
      durationMs: outcome.processingMs,
      startedLeftMs: leftMs,
      failureCode: outcome.failureCode,
    });
    return outcome;
  };

  if (!options.fifo) {
    const limit = pLimit(Math.max(1, options.concurrency));
    await Promise.all(
      records.map((item) =>
        limit(async () => {
          settle(await runOne(item));
        }),
      ),
    );
    return;
  }

  /** The first record of each group that was not acknowledged. */
  const blockedBy = new Map<string, RecordOutcome>();
  const skipped: BatchRecord[] = [];
  for (const item of records) {
    const group = item.record.attributes?.MessageGroupId ?? '';
    if (blockedBy.has(group)) {
      skipped.push(item);
      continue;
    }
    const outcome = await runOne(item);
    settle(outcome);
    if (!outcome.acknowledged) blockedBy.set(group, outcome);
  }
  for (const item of skipped) {
    const blocker = blockedBy.get(item.record.attributes?.MessageGroupId ?? '');
    settle(recordOutcome(unstartedFacts(item.record, item.receiveCount), verdicts.fifoBlocked(blocker)));
  }
}
