import type { Clock } from './clock.ts';
import type { DlqInbox, InboxState } from './ops-store.ts';

/**
 * What became of a redriven key within the wait: `succeeded` (its inbox entry COMPLETED), `failed` (FAILED_TERMINAL
 * again: quarantined, or left to the DLQ), `still retrying` (FAILED_RETRYABLE with an attempt counted since the re-arm
 * at the end of the wait), `timed out` (not processed within the wait: no entry yet, PROCESSING, or still re-armed).
 */
export type RedrivenOutcome = 'succeeded' | 'failed' | 'still retrying' | 'timed out';

/** One redriven key's outcome and the inbox entry it was judged by. */
export interface FollowedKey {
  readonly idempotencyKey: string;
  readonly outcome: RedrivenOutcome;
  readonly status: string | null;
  readonly failureCode: string | null;
  readonly attempts: number | null;
}

/** Options of {@link followRedrivenKeys}. */
export interface FollowOptions {
  readonly consumer: string;
  readonly keys: readonly string[];
  /** How long to wait for every key to settle. */
  readonly timeoutMs: number;
  /** Time between two reads of the inbox. @default 1000 */
  readonly pollMs?: number;
}

const settled = (state: InboxState | undefined) =>
  state?.status === 'COMPLETED' || state?.status === 'FAILED_TERMINAL';

/**
 * Follows redriven keys in the store's inbox ({@link DlqInbox.states}, one read of the unsettled keys every `pollMs`)
 * until each is COMPLETED or FAILED_TERMINAL, or `timeoutMs` has passed; returns every key's outcome in the order
 * given. The redrive re-armed each failed entry to FAILED_RETRYABLE with no attempts before it sent the copy, so an
 * entry with an attempt counted and still FAILED_RETRYABLE at the end has failed again, retryably.
 *
 * @example
 * ```ts
 * const outcomes = await followRedrivenKeys({ inbox, clock }, { consumer: 'case-worker', keys, timeoutMs: 60_000 });
 * ```
 */
export async function followRedrivenKeys(
  deps: { inbox: Pick<DlqInbox, 'states'>; clock: Clock },
  options: FollowOptions,
): Promise<FollowedKey[]> {
  const { inbox, clock } = deps;
  const deadline = clock.now().getTime() + options.timeoutMs;
  const last = new Map<string, InboxState>();
  let open = [...new Set(options.keys)];
  for (;;) {
    const states = await inbox.states(options.consumer, open);
    for (const [key, state] of states) last.set(key, state);
    open = open.filter((key) => !settled(states.get(key)));
    const left = deadline - clock.now().getTime();
    if (open.length === 0 || left <= 0) break;
    await clock.sleep(Math.min(options.pollMs ?? 1000, left));
  }
  return options.keys.map((key) => {
    const state = last.get(key);
    return {
      idempotencyKey: key,
      outcome: outcomeOf(state),
      status: state?.status ?? null,
      failureCode: state?.failureCode ?? null,
      attempts: state?.attempts ?? null,
    };
  });
}

function outcomeOf(state: InboxState | undefined): RedrivenOutcome {
  if (state?.status === 'COMPLETED') return 'succeeded';
  if (state?.status === 'FAILED_TERMINAL') return 'failed';
  if (state?.status === 'FAILED_RETRYABLE' && state.attempts > 0) return 'still retrying';
  return 'timed out';
}
