import type { Clock } from './clock.ts';
import type { SqsSender } from './collaborators.ts';
import type { DlqRedriveOptions, RedriveMove } from './dlq-redrive.ts';
import { dlqRedrive } from './dlq-redrive.ts';
import { FailedChecksError } from './errors.ts';
import type { FollowedKey } from './follow-redriven-keys.ts';
import { followRedrivenKeys } from './follow-redriven-keys.ts';
import { createMemoryOutput } from './memory-output.ts';
import type { OpsStore } from './ops-store.ts';
import type { OpsOutput } from './output.ts';
import { emit, table } from './output.ts';

/** Options of {@link dlqCanaryRedrive}: those of `dlq redrive` (always re-arming), and the rounds'. */
export interface DlqCanaryRedriveOptions
  extends Omit<DlqRedriveOptions, 'max' | 'dryRun' | 'rearm' | 'select'> {
  /** Messages of the first round (`--canary N`). */
  readonly canary: number;
  /** Keep redriving in rounds while they succeed (`--watch`); false stops after the first round. */
  readonly watch: boolean;
  /** Each round's size is the previous one's times this (rounded up). @default 1 */
  readonly growth?: number;
  /** Stop once more keys than this failed, over all rounds. @default 0 */
  readonly maxFailures?: number;
  /** How long a round waits for its keys' outcomes. */
  readonly roundTimeoutMs: number;
  /** Never move more than this many messages in all. @default 100000 */
  readonly max?: number;
  /** Time between two reads of the inbox while a round waits. @default 1000 */
  readonly pollMs?: number;
}

/** One round: the messages moved and each key's outcome. */
export interface CanaryRound {
  readonly round: number;
  readonly moves: RedriveMove[];
  readonly outcomes: FollowedKey[];
  readonly succeeded: number;
  readonly failed: number;
}

/** Why a canary redrive stopped. */
export type CanaryStop = 'drained' | 'failures' | 'max' | 'one round';

/** Result of {@link dlqCanaryRedrive}. */
export interface DlqCanaryRedriveResult {
  readonly rounds: CanaryRound[];
  readonly moved: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly maxFailures: number;
  readonly stoppedBy: CanaryStop;
  /**
   * When drained: the messages the last look at the DLQ held back (not matching the filter, no idempotency key to
   * follow, or a key sent already in this run); 0 otherwise.
   */
  readonly leftUnfollowable: number;
}

/**
 * `dlq redrive --canary N [--watch]`: redrives N DLQ messages (as `dlq redrive` does: audit row, send with the inbox
 * entry re-armed around it, delete from the DLQ only after the send succeeded), then follows their keys in the inbox
 * ({@link followRedrivenKeys}, at most `roundTimeoutMs`) and prints each key's outcome. With `watch` it goes on in rounds
 * (each `growth` times the previous one) while they succeed; it stops once more than `maxFailures` keys did not succeed
 * (failed again, still retrying or timed out at the round's end), when no message it can follow is left in the DLQ,
 * or at `max` messages in all.
 *
 * Only messages with a valid envelope are sent (the key is what is followed), and each key once per run; the others
 * stay in the DLQ and are counted in `leftUnfollowable`.
 *
 * @throws FailedChecksError (exit 1, after printing the result) when it stopped on failures.
 * @throws OperationError (exit 1) when a send or delete fails, as `dlq redrive`.
 * @example
 * ```ts
 * await dlqCanaryRedrive(
 *   { store, sqs, out, clock: systemClock },
 *   { dlqUrl, queueUrl, consumer: 'case-worker', canary: 5, watch: true, roundTimeoutMs: 60_000 },
 * );
 * ```
 */
export async function dlqCanaryRedrive(
  deps: { store: OpsStore; sqs: SqsSender; out: OpsOutput; clock: Clock },
  options: DlqCanaryRedriveOptions,
): Promise<DlqCanaryRedriveResult> {
  const { store, out, clock } = deps;
  const inbox = store.dlqInbox('dlq redrive --canary');
  const max = options.max ?? 100_000;
  const maxFailures = options.maxFailures ?? 0;
  const sent = new Set<string>();
  const rounds: CanaryRound[] = [];
  let size = options.canary;
  let moved = 0;
  let failed = 0;
  let stoppedBy: CanaryStop = 'max';
  let leftUnfollowable = 0;
  while (moved < max) {
    const redrive = await dlqRedrive(
      { store, sqs: deps.sqs, out: createMemoryOutput(), clock },
      {
        ...options,
        max: Math.min(size, max - moved),
        rearm: true,
        select: (entry) => {
          const key = entry.decoded.idempotencyKey;
          return entry.decoded.valid && key !== undefined && !sent.has(key);
        },
      },
    );
    if (redrive.moved === 0) {
      leftUnfollowable = redrive.leftInDlq;
      stoppedBy = 'drained';
      break;
    }
    const keys = [...new Set(redrive.moves.flatMap((m) => (m.idempotencyKey ? [m.idempotencyKey] : [])))];
    for (const key of keys) sent.add(key);
    const outcomes = await followRedrivenKeys(
      { inbox, clock },
      { consumer: options.consumer, keys, timeoutMs: options.roundTimeoutMs, pollMs: options.pollMs },
    );
    const round = roundOf(rounds.length + 1, redrive.moves, outcomes);
    rounds.push(round);
    if (!out.json) out.print(renderRound(round));
    moved += redrive.moved;
    failed += round.failed;
    if (failed > maxFailures) {
      stoppedBy = 'failures';
      break;
    }
    if (!options.watch) {
      stoppedBy = 'one round';
      break;
    }
    size = Math.max(1, Math.ceil(size * (options.growth ?? 1)));
  }
  const succeeded = rounds.reduce((sum, round) => sum + round.succeeded, 0);
  const result: DlqCanaryRedriveResult = {
    rounds,
    moved,
    succeeded,
    failed,
    maxFailures,
    stoppedBy,
    leftUnfollowable,
  };
  emit(out, result, () => renderSummary(result, options));
  if (stoppedBy === 'failures') {
    throw new FailedChecksError(
      `The canary redrive stopped: ${failed} redriven key(s) did not succeed (--max-failures ${maxFailures}).`,
      { failed, moved },
    );
  }
  return result;
}

function roundOf(round: number, moves: RedriveMove[], outcomes: FollowedKey[]): CanaryRound {
  const succeeded = outcomes.filter((o) => o.outcome === 'succeeded').length;
  return { round, moves, outcomes, succeeded, failed: outcomes.length - succeeded };
}

function renderRound(round: CanaryRound): string {
  return [
    `Round ${round.round}: ${round.moves.length} message(s) redriven, ${round.succeeded} key(s) succeeded, ${round.failed} did not.`,
    table(
      ['idempotency key', 'outcome', 'inbox status', 'failure code', 'attempts'],
      round.outcomes.map((o) => [o.idempotencyKey, o.outcome, o.status, o.failureCode, o.attempts]),
    ),
  ].join('\n');
}

function renderSummary(result: DlqCanaryRedriveResult, options: DlqCanaryRedriveOptions): string {
  const why: Record<CanaryStop, string> = {
    drained: 'no message left in the DLQ that this run can follow',
    failures: `more than --max-failures ${result.maxFailures} key(s) did not succeed`,
    max: `--max ${options.max} reached`,
    'one round': 'one round without --watch',
  };
  return [
    `Canary redrive stopped (${why[result.stoppedBy]}): ${result.moved} message(s) moved from ${options.dlqUrl} ` +
      `to ${options.queueUrl} in ${result.rounds.length} round(s); ${result.succeeded} succeeded, ${result.failed} did not.`,
    result.leftUnfollowable > 0
      ? `${result.leftUnfollowable} message(s) left in the DLQ that it does not send (not matching --filter, no ` +
        'idempotency key to follow, or a key sent already in this run): look at them with "sqs-worker dlq peek".'
      : '',
    result.stoppedBy === 'failures'
      ? 'The messages not yet redriven stay in the DLQ. Look at the failed keys with "sqs-worker inbox show <key>" ' +
        'before redriving more.'
      : '',
  ]
    .filter(Boolean)
    .join('\n');
}
