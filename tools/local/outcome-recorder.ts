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

  /**
   * Takes the outcome from one line of a worker's log, for a worker in another process (an execution environment of
   * the local function host, the poller's child process): the engine writes one `worker_message_<result>` line per
   * record, at the point where it calls `onOutcome`, with every field of the outcome but `hashMismatch`. Other lines
   * are ignored. Returns the outcome taken, if any.
   */
  readonly recordLogLine = (line: string): RecordOutcome | undefined => {
    if (!line.startsWith('{') || !line.includes('"worker_message_')) return undefined;
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return undefined;
    }
    const { message, messageId, result, acknowledged } = parsed;
    if (typeof message !== 'string' || !message.startsWith('worker_message_')) return undefined;
    if (typeof messageId !== 'string' || typeof result !== 'string' || typeof acknowledged !== 'boolean')
      return undefined;
    const outcome = parsed as unknown as RecordOutcome;
    this.onOutcome(outcome);
    return outcome;
  };

  /** How many outcomes of `idempotencyKey` had `result` (every delivery counts). */
  countOf(idempotencyKey: string, result: OutcomeResult): number {
    return this.outcomes.filter(
      (outcome) => outcome.idempotencyKey === idempotencyKey && outcome.result === result,
    ).length;
  }

  /** Outcome counts by result (of the outcomes `keep` keeps, or all). */
  counts(keep: (outcome: RecordedOutcome) => boolean = () => true): Partial<Record<OutcomeResult, number>> {
    const counts: Partial<Record<OutcomeResult, number>> = {};
    for (const outcome of this.outcomes.filter(keep))
      counts[outcome.result] = (counts[outcome.result] ?? 0) + 1;
    return counts;
  }
}
