import type postgres from 'postgres';
import type { LocalSqs } from '../local/local-sqs.ts';
import { runLambdaPass } from './contention-lambda.ts';
import { runPollerPass } from './contention-poller.ts';
import { type ContentionPassInput, createHotRows } from './contention-rig.ts';

/** A slow database: a session holds every hot row for `holdMs`, again and again, for `forMs` from the start. */
export interface SlowPhase {
  readonly forMs: number;
  /** Each hold (ms): longer than the lock timeout, so records waiting for the rows fail; `forMs` or more for one hold. */
  readonly holdMs: number;
  /** The messages of this phase's passes. @default the settings' `messages` */
  readonly messages?: number;
}

/** The poller's setting (the Fargate runtime). */
export interface PollerContentionSettings {
  /** The fixed setting's records in flight (`POLLER_CONCURRENCY`), and the adaptive limit's ceiling. */
  readonly concurrency: number;
  /** The slow phases it runs after the quiet one, each fixed then adaptive. */
  readonly slowPhases: readonly SlowPhase[];
}

/** The Lambda runtime's setting: the event source mapping and the worker. */
export interface LambdaContentionSettings {
  /** The fixed setting's `MaximumConcurrency` (invocations in flight), and the adaptive loop's ceiling. */
  readonly invocations: number;
  /** Records one invocation processes at a time (`WORKER_RECORD_CONCURRENCY`). */
  readonly recordConcurrency: number;
  /** Records per invocation (the mapping's `BatchSize`). */
  readonly batchSize: number;
  /** The adaptive loop's lowest `MaximumConcurrency` (`CONCURRENCY_FLOOR`). */
  readonly floor: number;
  /**
   * The messages of the quiet passes: enough for the loop to decide a few windows on the hot rows alone (a window a
   * loop minute, 2 s), which the line's messages at the ceiling's pace would not be. @default the settings' `messages`
   */
  readonly quietMessages?: number;
  /** The slow phases it runs after the quiet one, each fixed then adaptive: the loop needs 4–6 s a decision here. */
  readonly slowPhases: readonly SlowPhase[];
}

/** The settings of one contention run (every pass shares the database's side). */
export interface ContentionSettings {
  /** The messages of a pass (a slow phase may give its own). */
  readonly messages: number;
  /** Aggregates the messages update (each one row): few rows, many writers. */
  readonly hotRows: number;
  /** The worker's `lock_timeout` (ms): a record waiting longer for the row fails LOCK_TIMEOUT, retryable. */
  readonly lockTimeoutMs: number;
  readonly poller: PollerContentionSettings;
  readonly lambda: LambdaContentionSettings;
}

/** What one pass measured. */
export interface ContentionPass {
  readonly runtime: 'poller' | 'lambda';
  /** With a slow phase (`slow`), or the hot rows alone (`quiet`): the cost of the limit when nothing is wrong. */
  readonly scenario: 'quiet' | 'slow';
  /** The messages sent. */
  readonly messages: number;
  /** How long a session held the hot rows, again and again, from the start (0 when `quiet`). */
  readonly slowForMs: number;
  /** Each hold of the rows (ms; 0 when `quiet`). */
  readonly holdMs: number;
  readonly mode: 'fixed' | 'adaptive';
  /** From the start to the moment every message completed or sat in the DLQ. */
  readonly seconds: number;
  readonly completed: number;
  readonly messagesPerSecond: number;
  /** Deliveries that ended retryable (reported with a backoff), per message. */
  readonly retryablePerMessage: number;
  /** Receives beyond the first of each message: what SQS counts toward maxReceiveCount. */
  readonly extraReceives: number;
  /**
   * p99 of a record's time in the worker (ms): poller, from its receive to its settle; Lambda, its invocation's
   * duration (the batch's receive to the invocation's end, when the mapping deletes it or leaves it).
   */
  readonly p99RecordMs: number;
  readonly dlq: number;
  /**
   * The limit's lowest value: the poller's records in flight, Lambda's `MaximumConcurrency` (invocations); the fixed
   * setting's own in a fixed pass.
   */
  readonly lowestLimit: number;
}

/** The defaults of `npm run bench -- --only contention`. */
export const CONTENTION_DEFAULTS: ContentionSettings = {
  messages: 1200,
  hotRows: 4,
  lockTimeoutMs: 500,
  poller: { concurrency: 16, slowPhases: [{ forMs: 20_000, holdMs: 1500 }] },
  // 8 invocations × 2 records at a time: 16 records in the database at the ceiling, as the poller's 16 (batch 4: two
  // rounds an invocation). The loop decides a window every 2 s, the first 4–6 s in: its slow phase is twice the
  // poller's. The second phase locks the rows in one hold in which the fixed setting receives each of its 200 messages
  // five times (the emulator puts a message whose visibility ends behind the visible ones: a message comes round once
  // the backlog has), so they go to the DLQ.
  lambda: {
    invocations: 8,
    recordConcurrency: 2,
    batchSize: 4,
    floor: 2,
    quietMessages: 6000,
    slowPhases: [
      { forMs: 40_000, holdMs: 1500 },
      { forMs: 45_000, holdMs: 45_000, messages: 200 },
    ],
  },
};

/**
 * The contention scenario: a hot aggregate (few rows, every message an update of one) under row-lock contention,
 * and a database slow for a while (a session holding the rows longer than the worker's lock timeout, again and
 * again), drained by each runtime at a fixed concurrency and then with its adaptive limit, on the same database:
 * the poller (the Fargate runtime, its limit in the process) and the Lambda worker behind the local event source
 * mapping (its limit the breaker's loop of `MaximumConcurrency`); first the hot rows alone (nothing for the limit to
 * react to: what it costs), then with each slow phase.
 */
export async function benchContention(input: {
  readonly admin: postgres.Sql;
  readonly url: string;
  readonly sqs: LocalSqs;
  readonly settings?: Partial<ContentionSettings>;
  readonly log: (line: string) => void;
}): Promise<{ settings: ContentionSettings; passes: ContentionPass[] }> {
  const settings = { ...CONTENTION_DEFAULTS, ...input.settings };
  await createHotRows(input.admin, settings.hotRows);
  const passInput: ContentionPassInput = { ...input, settings };
  const passes: ContentionPass[] = [];
  const runtimes = [
    [runPollerPass, settings.poller.slowPhases, undefined],
    [runLambdaPass, settings.lambda.slowPhases, settings.lambda.quietMessages],
  ] as const;
  for (const [runPass, slowPhases, quietMessages] of runtimes) {
    const quiet: SlowPhase = { forMs: 0, holdMs: 0, ...(quietMessages ? { messages: quietMessages } : {}) };
    for (const phase of [quiet, ...slowPhases]) {
      for (const mode of ['fixed', 'adaptive'] as const) {
        const plan = {
          scenario: phase.forMs === 0 ? ('quiet' as const) : ('slow' as const),
          mode,
          messages: phase.messages ?? settings.messages,
          slowForMs: phase.forMs,
          holdMs: phase.holdMs,
        };
        passes.push(await runPass(plan, passInput));
      }
    }
  }
  return { settings, passes };
}
