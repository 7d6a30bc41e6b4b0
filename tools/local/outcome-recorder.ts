import type { OutcomeResult, RecordOutcome } from '../../lambda/worker/outcome.ts';

/** A record's outcome as {@link OutcomeRecorder} kept it, with when it was decided. */
export type RecordedOutcome = RecordOutcome & {
  /** When the engine gave it (epoch ms). */
  readonly at: number;
};

/**
 * Keeps every outcome the worker decides, for local runs and tests: pass {@link OutcomeRecorder.onOutcome} as the
 * worker's `onOutcome` option, so the outcomes come from the real engine (its final ones, once per record per
 * batch), not from its log lines.
 *
 * @example
 * ```ts
 * const recorder = new OutcomeRecorder();
 * const handler = createWorker({ consumer, handlers, sql, onOutcome: recorder.onOutcome });
 * ```
 */
export class OutcomeRecorder {
  /** Every outcome, in the order the engine gave them. */
  readonly outcomes: RecordedOutcome[] = [];

  /** The worker's `onOutcome` hook (bound: pass it as it is). */
  readonly onOutcome = (outcome: RecordOutcome): void => {
    this.outcomes.push({ ...outcome, at: Date.now() });
  };

  /** How many outcomes of `idempotencyKey` had `result` (every delivery counts). */
  countOf(idempotencyKey: string, result: OutcomeResult): number {
    return this.outcomes.filter(
      (outcome) => outcome.idempotencyKey === idempotencyKey && outcome.result === result,
    ).length;
  }

  /** Outcome counts by result. */
  counts(): Partial<Record<OutcomeResult, number>> {
    const counts: Partial<Record<OutcomeResult, number>> = {};
    for (const outcome of this.outcomes) counts[outcome.result] = (counts[outcome.result] ?? 0) + 1;
    return counts;
  }
}
