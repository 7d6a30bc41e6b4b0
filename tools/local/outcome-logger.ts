import { Logger } from '@aws-lambda-powertools/logger';
import type { LogItemExtraInput, LogItemMessage } from '@aws-lambda-powertools/logger/types';
import type { OutcomeResult } from '../../lambda/worker/outcome.ts';

/** One `worker_message_<result>` log line of the worker, as captured by {@link OutcomeLogger}. */
export interface CapturedOutcome {
  readonly result: OutcomeResult;
  readonly messageId?: string;
  readonly idempotencyKey?: string;
  readonly messageType?: string;
  readonly failureCode?: string;
  readonly receiveCount?: number;
  readonly visibilitySeconds?: number;
  readonly quarantined?: boolean;
  /** When the line was written (epoch ms). */
  readonly at: number;
}

const OUTCOME_LINE = /^worker_message_([a-z_]+)$/;

/**
 * A Powertools `Logger` for local runs and tests that captures the worker's per-record outcome lines
 * (`worker_message_completed`, `…_duplicate`, …) and counts them, and writes nothing unless `echo` is set.
 * The worker takes it as its `logger`, so the outcomes come from the real engine, not a re-implementation.
 */
export class OutcomeLogger extends Logger {
  /** Every outcome line, in order. */
  readonly outcomes: CapturedOutcome[] = [];

  constructor(options: { serviceName?: string; echo?: boolean } = {}) {
    super({ serviceName: options.serviceName ?? 'local-worker', logLevel: options.echo ? 'INFO' : 'SILENT' });
  }

  /** Outcome counts by result. */
  counts(): Partial<Record<OutcomeResult, number>> {
    const counts: Partial<Record<OutcomeResult, number>> = {};
    for (const outcome of this.outcomes) counts[outcome.result] = (counts[outcome.result] ?? 0) + 1;
    return counts;
  }

  override info(input: LogItemMessage, ...extra: LogItemExtraInput): void {
    this.capture(input, extra);
    super.info(input, ...extra);
  }

  override warn(input: LogItemMessage, ...extra: LogItemExtraInput): void {
    this.capture(input, extra);
    super.warn(input, ...extra);
  }

  override error(input: LogItemMessage, ...extra: LogItemExtraInput): void {
    this.capture(input, extra);
    super.error(input, ...extra);
  }

  private capture(input: unknown, extra: unknown[]): void {
    const match = typeof input === 'string' ? OUTCOME_LINE.exec(input) : null;
    if (!match) return;
    const fields = (extra[0] ?? {}) as Record<string, unknown>;
    this.outcomes.push({
      result: (match[1] as string).toUpperCase() as OutcomeResult,
      messageId: fields.messageId as string | undefined,
      idempotencyKey: fields.idempotencyKey as string | undefined,
      messageType: fields.messageType as string | undefined,
      failureCode: fields.failureCode as string | undefined,
      receiveCount: fields.receiveCount as number | undefined,
      visibilitySeconds: fields.visibilitySeconds as number | undefined,
      quarantined: fields.quarantined as boolean | undefined,
      at: Date.now(),
    });
  }
}
