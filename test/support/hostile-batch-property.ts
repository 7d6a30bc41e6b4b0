import { createHash } from 'node:crypto';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import fc from 'fast-check';
import { expect } from 'vitest';
import type { RecordOutcome } from '../../lambda/worker/outcome.ts';
import { deliverUntilSettled, type MessageHistory } from './deliver-until-settled.ts';
import {
  buildMessages,
  type GoodTypes,
  type HostileMessage,
  messageCasesArb,
  shuffled,
  slowMessage,
} from './hostile-messages.ts';

/** A fault injected into one run: none, one slow record, or the store stalled for the run's first invocation. */
export type Injection = 'none' | 'slow-record' | 'store-stall';

/** A store as a property run needs it: a warm Lambda environment on it, its state read back, a black hole. */
export interface PropertyStore {
  readonly types: GoodTypes;
  /** A new execution environment: the Lambda handler of a worker on this store; its outcomes go to `onOutcome`. */
  environment(onOutcome: (outcome: RecordOutcome) => void): Promise<{
    readonly handler: (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;
    close(): Promise<void>;
  }>;
  /** How many times a message's payment was applied (0, 1, or — a defect — more). */
  effects(message: HostileMessage): Promise<number>;
  /** The reason codes of the quarantine entries of a body (by its SHA-256, as both stores key them). */
  quarantineCodes(bodyHash: string): Promise<string[]>;
  /** The store stops answering (connections open, nothing forwarded) until {@link PropertyStore.restore}. */
  stall(): void;
  restore(): void;
}

/** Deliveries within which a good message is applied, with one injected fault and a duplicate in flight. */
export const GOOD_MESSAGE_DELIVERIES = 3;

/** Failure codes a good message may see: the fault injected into its run, and a duplicate of it in flight. */
const FAULT_CODES: Record<Injection, readonly string[]> = {
  none: ['IN_PROGRESS_ELSEWHERE'],
  'slow-record': ['IN_PROGRESS_ELSEWHERE', 'DEADLINE_DEFERRED', 'HANDLER_TIMEOUT', 'BATCH_COMMIT_FAILED'],
  // A stalled store times its calls out; the rest of that batch is reported without touching it.
  'store-stall': [
    'IN_PROGRESS_ELSEWHERE',
    'DEADLINE_DEFERRED',
    'DATABASE_TIMEOUT',
    'DATABASE_UNAVAILABLE',
    'BATCH_COMMIT_FAILED',
    'RECORD_UNSETTLED',
  ],
};

const bodyHash = (body: string) => createHash('sha256').update(body).digest('hex');

/** One line per message for a failing run's report: never a whole body (some are 200 KB). */
const describeRun = (histories: readonly MessageHistory[], outcomes: Map<string, RecordOutcome[]>) =>
  histories
    .map(
      (h) =>
        `${h.message.kind}/${h.message.expect}: ${h.fate} after ${h.deliveries} → ${(
          outcomes.get(h.messageId) ?? []
        )
          .map((o) => `${o.result}${o.failureCode ? `:${o.failureCode}` : ''}`)
          .join(', ')}`,
    )
    .join('\n');

/**
 * How a property run's messages reach a worker: until each one is deleted or in the DLQ, its outcomes given to
 * `onOutcome`, with the run's fault injected; resolves with every message's deliveries and fate.
 */
export type PropertyRuntime = (
  store: PropertyStore,
  messages: readonly HostileMessage[],
  injection: Injection,
  onOutcome: (outcome: RecordOutcome) => void,
) => Promise<MessageHistory[]>;

/**
 * The Lambda runtime: a warm execution environment of the store's worker, fed as the event source mapping feeds it
 * ({@link deliverUntilSettled}); a stall lasts the run's first invocation.
 */
export const lambdaRuntime =
  (timeoutMs: number): PropertyRuntime =>
  async (store, messages, injection, onOutcome) => {
    const environment = await store.environment(onOutcome);
    try {
      const { histories } = await deliverUntilSettled(environment.handler, messages, {
        timeoutMs,
        hangMarginMs: 10_000,
        around: async (index, invoke) => {
          if (injection !== 'store-stall' || index > 0) return invoke();
          store.stall();
          try {
            return await invoke();
          } finally {
            store.restore();
          }
        },
      });
      return histories;
    } finally {
      await environment.close();
    }
  };

/**
 * The property every store, commit mode and runtime must hold, over any batch that mixes hostile bodies (random
 * JSON of any depth and size, escaped NULs and lone surrogates, huge strings, wrong types, JSON keys written twice,
 * reused keys with other payloads, random message attributes) with good payments, and any one injected slow record
 * or stall:
 * - the worker never throws for a record and never runs past its budget (plus a margin for its last store call);
 * - every good payment is applied exactly once, within {@link GOOD_MESSAGE_DELIVERIES} deliveries, and its
 *   outcomes show no failure but the injected fault's (no record's content changes another record's outcome);
 * - every bad message is quarantined with a code and acknowledged, never left to the DLQ;
 * - of messages that share a key with different payloads, exactly one is applied and the others are quarantined.
 *
 * `npm test` runs `settings.numRuns` runs (default 10) from a fixed seed. `PROPERTY_RUNS` scales every file's runs
 * (10 is the default scale: a file of 3 runs makes 60 at 200) and `PROPERTY_SEED` sets the seed (`random`: a new one,
 * printed with any counterexample): `npm run soak:property` runs 200 from a random seed.
 */
export async function checkHostileBatches(
  store: PropertyStore,
  runtime: PropertyRuntime,
  settings: { readonly numRuns?: number } = {},
): Promise<void> {
  const base = settings.numRuns ?? 10;
  const scale = process.env.PROPERTY_RUNS ? Number(process.env.PROPERTY_RUNS) / 10 : 1;
  const numRuns = Math.max(1, Math.round(base * scale));
  const seed =
    process.env.PROPERTY_SEED === 'random'
      ? Date.now() % 2 ** 31
      : Number(process.env.PROPERTY_SEED ?? 20261204);
  const property = fc.asyncProperty(
    messageCasesArb,
    fc.array(fc.nat(), { minLength: 1, maxLength: 40 }),
    fc.constantFrom<Injection>('none', 'none', 'slow-record', 'store-stall'),
    async (cases, order, injection) => {
      const built = cases.flatMap((item) => buildMessages(item, store.types));
      const messages = shuffled(
        injection === 'slow-record' ? [slowMessage(store.types), ...built] : built,
        order,
      );
      const outcomes = new Map<string, RecordOutcome[]>();
      const histories = await runtime(store, messages, injection, (outcome) => {
        outcomes.set(outcome.messageId, [...(outcomes.get(outcome.messageId) ?? []), outcome]);
      });
      await assertRun(store, histories, outcomes, injection);
    },
  );
  await fc.assert(property, { numRuns, seed, endOnFailure: process.env.CI === 'true' });
}

async function assertRun(
  store: PropertyStore,
  histories: readonly MessageHistory[],
  outcomes: Map<string, RecordOutcome[]>,
  injection: Injection,
): Promise<void> {
  const report = describeRun(histories, outcomes);
  const groups = new Map<string, number>();
  for (const history of histories) {
    const { message } = history;
    const seen = outcomes.get(history.messageId) ?? [];
    const last = seen.at(-1);
    const where = `${message.kind} (${message.expect}) in run:\n${report}`;
    expect(history.fate, `never in the DLQ: ${where}`).toBe('deleted');
    const effects = message.paymentId ? await store.effects(message) : 0;
    expect(effects, `applied at most once: ${where}`).toBeLessThanOrEqual(1);
    const quarantined = last?.result === 'TERMINAL_FAILURE' && last.quarantined === true;
    if (quarantined) {
      expect(last?.failureCode, `quarantined with a code: ${where}`).toBeTruthy();
      expect(await store.quarantineCodes(bodyHash(message.body)), `quarantine entry: ${where}`).toContain(
        last?.failureCode,
      );
    }
    if (message.group) groups.set(message.group, (groups.get(message.group) ?? 0) + effects);
    if (message.expect === 'applied') {
      expect(effects, `a good message applied once: ${where}`).toBe(1);
      expect(
        history.deliveries,
        `within ${GOOD_MESSAGE_DELIVERIES} deliveries: ${where}`,
      ).toBeLessThanOrEqual(GOOD_MESSAGE_DELIVERIES);
      const unexpected = seen
        .map((outcome) => outcome.failureCode)
        .filter((code): code is string => code !== undefined && !FAULT_CODES[injection].includes(code));
      expect(unexpected, `no failure but the injected fault's: ${where}`).toEqual([]);
    } else if (message.expect === 'quarantined') {
      expect(quarantined, `a bad message quarantined: ${where}`).toBe(true);
    } else {
      expect(effects === 1 || quarantined, `applied or quarantined: ${where}`).toBe(true);
    }
  }
  for (const [group, applied] of groups) {
    expect(applied, `one message of reused key ${group} applied: ${report}`).toBe(1);
  }
  // The fault was injected for real: the slow record timed out once; under a stall, records of the first delivery
  // were reported (every record touches the store: its claim, or its quarantine).
  const first = [...outcomes.values()].flatMap((seen) =>
    seen.filter((outcome) => outcome.receiveCount === 1),
  );
  if (injection === 'slow-record') {
    // It sleeps past the budget on its first delivery: that delivery cannot have applied it (its outcome is
    // HANDLER_TIMEOUT, or per batch DEADLINE_DEFERRED when its batch ran again after the timeout rolled it back).
    const slow = histories.find((history) => history.message.slow);
    expect(slow?.deliveries, `the slow record needed another delivery: ${report}`).toBeGreaterThan(1);
  }
  if (injection === 'store-stall') {
    expect(
      first.some((outcome) => !outcome.acknowledged),
      `the stall was felt: ${report}`,
    ).toBe(true);
  }
}
