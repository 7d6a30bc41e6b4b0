import type { CanaryInboxState, CanaryStore } from './canary-store.ts';
import type { Clock } from './clock.ts';
import type { SqsSender } from './collaborators.ts';
import { readQueueAttributes } from './read-queue-attributes.ts';
import { type Canary, sendCanary } from './send-canary.ts';
import { fail, pass, SMOKE_CHECKS, type SmokeCheck, skip } from './smoke-check.ts';
import { takeDlqCanary } from './take-dlq-canary.ts';

/** What the canary checks share: the collaborators, the queue and the run's deadline. */
export interface CanaryRun {
  readonly sqs: SqsSender;
  readonly clock: Clock;
  readonly store: CanaryStore;
  readonly queueUrl: string;
  readonly fifo: boolean;
  readonly runId: string;
  /** Epoch ms after which no wait goes on. */
  readonly deadlineMs: number;
  readonly pollMs: number;
}

/** A canary's message, once its outcome is known: whether its inbox state may be removed. */
export interface Settled {
  readonly check: SmokeCheck;
  /** Its messages are out of the source queue: its inbox state may be removed. */
  readonly settled: boolean;
  /** The inbox state when the check decided. */
  readonly state?: CanaryInboxState;
}

/**
 * Polls `probe` every `pollMs` until it returns a value or the run's deadline passes (then undefined).
 *
 * @internal
 */
export async function until<T>(run: CanaryRun, probe: () => Promise<T | undefined>): Promise<T | undefined> {
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (run.clock.now().getTime() + run.pollMs > run.deadlineMs) return undefined;
    await run.clock.sleep(run.pollMs);
  }
}

/** How often the DLQ is read for the never-recovering canary before the inbox counts its last attempt. */
const DLQ_LOOK_EVERY_MS = 5000;

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** What the store shows of a canary that did not reach its outcome, and what to look at. */
async function whatHappened(run: CanaryRun, message: Canary): Promise<string> {
  const state = await run.store.inbox(message.key);
  const quarantined = await run.store.quarantined(message.key, message.body);
  if (quarantined?.reasonCode === 'UNKNOWN_MESSAGE_TYPE') {
    return 'quarantined as UNKNOWN_MESSAGE_TYPE: the worker does not register the canary handler (deploy this version of the toolkit)';
  }
  if (quarantined) return `quarantined as ${quarantined.reasonCode}`;
  if (state) {
    return `inbox ${state.status}${state.failureCode ? ` (${state.failureCode})` : ''} after ${state.attempts} attempt(s)`;
  }
  const queue = await readQueueAttributes(run.sqs, run.queueUrl).catch(() => undefined);
  const depth = queue ? ` (queue: ${queue.visible} visible, ${queue.inFlight} in flight)` : '';
  return `no inbox state for ${message.key}${depth}: is a worker consuming the queue?`;
}

/**
 * "A canary applied once": sends the `apply` canary and waits for its inbox state COMPLETED with the result
 * reference `canary:<runId>`.
 *
 * @internal
 */
export async function checkApplied(run: CanaryRun, message: Canary): Promise<Settled> {
  const name = SMOKE_CHECKS.applied;
  const started = run.clock.now().getTime();
  await sendCanary(run.sqs, run.queueUrl, run.fifo, message);
  const state = await until(run, async () => {
    const current = await run.store.inbox(message.key);
    if (current?.status === 'COMPLETED' || current?.status === 'FAILED_TERMINAL') return current;
    return (await run.store.quarantined(message.key, message.body)) ? (current ?? null) : undefined;
  });
  const took = seconds(run.clock.now().getTime() - started);
  if (state?.status === 'COMPLETED' && state.resultRef === `canary:${run.runId}`) {
    return {
      check: pass(name, `COMPLETED in ${took}, ${state.attempts} attempt(s), result ${state.resultRef}`),
      settled: true,
      state,
    };
  }
  if (state?.status === 'COMPLETED') {
    return {
      check: fail(
        name,
        `COMPLETED with result ${state.resultRef ?? '(none)'}, not canary:${run.runId}: a handler of your own answers SqsInboxWorkerCanary; leave that type to the toolkit`,
      ),
      settled: true,
      state,
    };
  }
  const settled = state !== undefined;
  return {
    check: fail(name, `not applied within ${took}: ${await whatHappened(run, message)}`),
    settled,
    ...(state ? { state } : {}),
  };
}

/**
 * "Its duplicate a no-op": sends the applied canary's body again. PostgreSQL records the duplicate (its message id,
 * one more claim) on the unchanged COMPLETED row; DynamoDB's gate writes nothing for a duplicate, so there the
 * duplicate is judged gone when the source queue shows nothing visible, in flight or delayed twice in a row, and the
 * item must be unchanged.
 *
 * @internal
 */
export async function checkDuplicate(
  run: CanaryRun,
  message: Canary,
  first: CanaryInboxState,
): Promise<Settled> {
  const name = SMOKE_CHECKS.duplicate;
  const messageId = await sendCanary(run.sqs, run.queueUrl, run.fifo, message);
  let seen: CanaryInboxState | undefined;
  if (run.store.recordsDuplicates) {
    seen = await until(run, async () => {
      const current = await run.store.inbox(message.key);
      return current?.lastMessageId === messageId ? current : undefined;
    });
  } else {
    let quiet = 0;
    const drained = await until(run, async () => {
      const queue = await readQueueAttributes(run.sqs, run.queueUrl);
      quiet = queue.visible + queue.inFlight + queue.delayed === 0 ? quiet + 1 : 0;
      return quiet >= 2 ? true : undefined;
    });
    if (drained) seen = await run.store.inbox(message.key);
  }
  if (!seen) {
    const current = await run.store.inbox(message.key);
    if (!run.store.recordsDuplicates && unchanged(first, current)) {
      return {
        check: skip(
          name,
          'not observed: the queue did not empty in time (the DynamoDB store keeps no trace of a duplicate); the item is unchanged so far',
        ),
        settled: false,
      };
    }
    return {
      check: fail(name, `the duplicate was not processed in time: ${await whatHappened(run, message)}`),
      settled: false,
    };
  }
  if (!unchanged(first, seen, run.store.recordsDuplicates ? 1 : 0)) {
    return {
      check: fail(
        name,
        `the duplicate changed the inbox state: ${first.status} → ${seen.status}, completed ${first.completedAt} → ${seen.completedAt}`,
      ),
      settled: true,
    };
  }
  return {
    check: pass(
      name,
      run.store.recordsDuplicates
        ? `seen (claim ${seen.attempts}), still COMPLETED at ${seen.completedAt}`
        : `the queue emptied after it; the item is unchanged (COMPLETED at ${seen.completedAt})`,
    ),
    settled: true,
  };
}

/** The state after a duplicate is the state before, but for `claims` more claims counted. */
function unchanged(before: CanaryInboxState, after: CanaryInboxState | undefined, claims = 0): boolean {
  return (
    after !== undefined &&
    after.status === 'COMPLETED' &&
    after.completedAt === before.completedAt &&
    after.resultRef === before.resultRef &&
    after.attempts === before.attempts + claims
  );
}

/**
 * "A poison canary quarantined": sends the `poison` canary and waits for its inbox state FAILED_TERMINAL
 * (`CANARY_POISON`) and its quarantine entry.
 *
 * @internal
 */
export async function checkPoison(run: CanaryRun, message: Canary): Promise<Settled> {
  const name = SMOKE_CHECKS.poison;
  const started = run.clock.now().getTime();
  await sendCanary(run.sqs, run.queueUrl, run.fifo, message);
  const found = await until(run, async () => {
    const state = await run.store.inbox(message.key);
    if (state?.status === 'COMPLETED') return { state, entry: undefined };
    const entry = await run.store.quarantined(message.key, message.body);
    return entry && state?.status === 'FAILED_TERMINAL' ? { state, entry } : undefined;
  });
  const took = seconds(run.clock.now().getTime() - started);
  if (found?.entry && found.state.failureCode === 'CANARY_POISON') {
    return {
      check: pass(
        name,
        `FAILED_TERMINAL ${found.state.failureCode} in ${took}, quarantine entry ${found.entry.id.slice(0, 12)}`,
      ),
      settled: true,
      state: found.state,
    };
  }
  if (found) {
    return {
      check: fail(
        name,
        found.entry
          ? `quarantined as ${found.state.failureCode}, not CANARY_POISON`
          : 'the poison canary was applied: a handler of your own answers SqsInboxWorkerCanary',
      ),
      settled: true,
      state: found.state,
    };
  }
  return {
    check: fail(name, `not quarantined within ${took}: ${await whatHappened(run, message)}`),
    settled: false,
  };
}

/**
 * "A never-recovering canary reaches the DLQ": sends the `retry` canary, which fails retryably at every receive,
 * and looks for it in the DLQ until the deadline; found, it is deleted there.
 *
 * @internal
 */
export async function checkDlq(
  run: CanaryRun,
  message: Canary,
  dlq: { readonly url: string | undefined; readonly maxReceiveCount: number | undefined },
): Promise<Settled> {
  const name = SMOKE_CHECKS.dlq;
  if (!dlq.url)
    return { check: fail(name, 'no DLQ URL: pass --dlq-url or set WORKER_DLQ_URL'), settled: true };
  if (dlq.maxReceiveCount === undefined) {
    return {
      check: fail(
        name,
        `the source queue has no RedrivePolicy: nothing moves a failing message to ${dlq.url}`,
      ),
      settled: true,
    };
  }
  const url = dlq.url;
  const started = run.clock.now().getTime();
  await sendCanary(run.sqs, run.queueUrl, run.fifo, message);
  // The DLQ is read once the inbox counts maxReceiveCount attempts (SQS moves the message at the next receive),
  // and otherwise every few seconds (a receive the worker did not count): each look receives the DLQ's messages.
  const maxReceiveCount = dlq.maxReceiveCount;
  let lookedAt = 0;
  const taken = await until(run, async () => {
    const now = run.clock.now().getTime();
    const attempts = (await run.store.inbox(message.key))?.attempts ?? 0;
    if (attempts < maxReceiveCount && now - lookedAt < DLQ_LOOK_EVERY_MS) return undefined;
    lookedAt = now;
    const found = await takeDlqCanary(run.sqs, url, message.key, message.body);
    return found.found ? found : undefined;
  });
  const took = seconds(run.clock.now().getTime() - started);
  const state = await run.store.inbox(message.key);
  const attempts = state ? `, ${state.attempts} attempt(s) ${state.failureCode ?? ''}`.trimEnd() : '';
  if (!taken) {
    return {
      check: fail(
        name,
        `not in the DLQ within ${took} (maxReceiveCount ${dlq.maxReceiveCount}${attempts}): it takes maxReceiveCount receives and their backoff; raise --timeout, or --skip-dlq`,
      ),
      settled: false,
    };
  }
  return {
    check: taken.bodyIntact
      ? pass(
          name,
          `in the DLQ after ${took} (maxReceiveCount ${dlq.maxReceiveCount}${attempts}), body intact; deleted there`,
        )
      : fail(name, `in the DLQ after ${took}, but its body changed on the way`),
    settled: true,
  };
}
