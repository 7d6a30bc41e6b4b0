import type { Envelope } from '../../lambda/worker/envelope.ts';
import { exampleEnvelope } from './example-envelope.ts';

/** The cases of the pattern document's failure list that the demo scenario covers. */
export type ScenarioCase =
  | 'normal'
  | 'duplicate'
  | 'same-key-different-payload'
  | 'poison'
  | 'out-of-order'
  | 'retryable-then-succeeds'
  | 'never-recovers'
  | 'terminal'
  | 'payload-ref'
  | 'payload-ref-broken';

/**
 * One message of the demo scenario.
 *
 * @internal
 */
export interface ScenarioMessage {
  readonly body: string;
  readonly kind: ScenarioCase;
  /** Undefined for poison messages. */
  readonly key?: string;
  /** Sent only after `after` keys completed (to force an order that a standard queue does not give). */
  readonly phase: 1 | 2;
  /** Written by a producer transaction to `outbox_events` and published by the relay, not sent directly. */
  readonly viaOutbox?: boolean;
}

/**
 * The idempotency key of a body, or undefined when it has none.
 *
 * @internal
 */
export function keyOf(body: string): string | undefined {
  try {
    return (JSON.parse(body) as { idempotencyKey?: string }).idempotencyKey;
  } catch {
    return undefined;
  }
}

/**
 * The number of regular messages a demo run sends: `messages`, 200 by default, a whole number from 20 to 100,000.
 *
 * @internal
 */
export function demoMessageCount(messages: number | undefined): number {
  const count = messages ?? 200;
  if (!Number.isInteger(count) || count < 20 || count > 100_000) {
    throw new Error(`messages must be a whole number from 20 to 100000 (given ${count})`);
  }
  return count;
}

/**
 * The messages every store's demo sends, as {@link buildDemoMessages} made them, and the builders for the cases a
 * store adds of its own.
 *
 * @internal
 */
export interface DemoMessages {
  /** Every message added so far, in sending order. */
  readonly messages: ScenarioMessage[];
  /** Adds a message (an envelope, or a raw body) and returns its body. */
  add(kind: ScenarioCase, envelope: object | string, phase?: 1 | 2, viaOutbox?: boolean): string;
  /** `CaseStageChanged` of `caseId` to `stageName` at `version`. */
  stage(caseId: string, version: number, stageName: string): Envelope;
  /** `CaseDeadlineCalculationRequested` of `caseId` in `stageName`. */
  deadline(caseId: string, stageName: string, attemptPolicy?: Envelope['attemptPolicy']): Envelope;
  /** The regular cases, which exist at version 1 before the run. */
  readonly caseIds: readonly string[];
  /** The cases whose stage changes arrive out of order (v3, then v2). */
  readonly outOfOrder: readonly string[];
  /** Payments sent (1 to `paymentCount`; payment 1 again with another amount). */
  readonly paymentCount: number;
  /** Keys that must be COMPLETED before phase 2 is sent. */
  readonly phase2After: readonly string[];
  /** Payment bodies whose first delete is dropped (a crash between commit and delete): 2 %. */
  readonly crashBodies: ReadonlySet<string>;
}

/** `CaseStageChanged` of `caseId` to `stageName` at `version`. */
function stageEnvelope(caseId: string, version: number, stageName: string): Envelope {
  return exampleEnvelope({
    messageType: 'CaseStageChanged',
    idempotencyKey: `${caseId}:stage:v${version}`,
    aggregateType: 'Case',
    aggregateId: caseId,
    payload: { caseId, stage: stageName, version },
  });
}

/** `CaseDeadlineCalculationRequested` of `caseId` in `stageName`, with the producer's attempt policy if given. */
function deadlineEnvelope(
  caseId: string,
  stageName: string,
  attemptPolicy?: Envelope['attemptPolicy'],
): Envelope {
  return {
    ...exampleEnvelope({
      messageType: 'CaseDeadlineCalculationRequested',
      idempotencyKey: `${caseId}:deadline:${stageName}`,
      aggregateType: 'Case',
      aggregateId: caseId,
      payload: { caseId, stage: stageName, effectiveAt: '2026-07-06T10:15:30Z' },
    }),
    ...(attemptPolicy ? { attemptPolicy } : {}),
  };
}

/** `PaymentCaptured` of payment `index` of the run, of `amount` EUR on `accountId`. */
function paymentEnvelope(runId: string, index: number, accountId: string, amount: number): Envelope {
  return exampleEnvelope({
    messageType: 'PaymentCaptured',
    idempotencyKey: `${runId}-payment-${index}`,
    aggregateType: 'Payment',
    aggregateId: `${runId}-payment-${index}`,
    payload: { paymentId: `${runId}-payment-${index}`, accountId, amount, currency: 'EUR' },
  });
}

/** The options of {@link buildDemoMessages}. */
interface DemoMessagesOptions {
  /** The account of payment `index`. */
  readonly accountId: (index: number) => string;
  /** Deadline requests take the producer path (outbox row, then the relay) instead of being sent directly. */
  readonly deadlinesViaOutbox: boolean;
}

/**
 * Builds the demo's messages that are the same on every store; all ids are prefixed with `runId` so runs never
 * collide. The store's own cases (a retryable failure, one that never recovers, payload references) are added
 * after them with `add`.
 *
 * @internal
 */
export function buildDemoMessages(runId: string, count: number, options: DemoMessagesOptions): DemoMessages {
  const messages: ScenarioMessage[] = [];
  const add = (kind: ScenarioCase, envelope: object | string, phase: 1 | 2 = 1, viaOutbox = false) => {
    const body = typeof envelope === 'string' ? envelope : JSON.stringify(envelope);
    const key = keyOf(body);
    messages.push({ body, kind, key, phase, viaOutbox });
    return body;
  };
  const caseIds = Array.from(
    { length: Math.max(5, Math.floor(count / 10)) },
    (_, i) => `${runId}-case-${i + 1}`,
  );
  const payment = (index: number, amount = 10 + (index % 90)) =>
    paymentEnvelope(runId, index, options.accountId(index), amount);

  // Out of order: version 3 first; version 2 is sent once version 3 is applied, and must change nothing.
  const outOfOrder = caseIds.slice(0, 3);
  for (const caseId of outOfOrder) add('out-of-order', stageEnvelope(caseId, 3, 'REVIEW'));
  for (const caseId of outOfOrder) add('out-of-order', stageEnvelope(caseId, 2, 'INVESTIGATION'), 2);
  const { payments, paymentCount } = addNormalTraffic(add, {
    caseIds: caseIds.slice(3),
    count: count - outOfOrder.length * 2,
    payment,
    deadlinesViaOutbox: options.deadlinesViaOutbox,
  });
  addFailureCases(add, runId, { payments, payment, caseId: caseIds[3] as string });

  return {
    messages,
    add,
    stage: stageEnvelope,
    deadline: deadlineEnvelope,
    caseIds,
    outOfOrder,
    paymentCount,
    phase2After: [...outOfOrder.map((caseId) => `${caseId}:stage:v3`), `${runId}-payment-1`],
    crashBodies: new Set(payments.filter((_, i) => i % 50 === 7)),
  };
}

/**
 * Normal traffic: `count` messages, payments and deadline requests (two stages for each of `caseIds`, one message
 * in five while they last). Returns the payments' bodies and how many were sent.
 */
function addNormalTraffic(
  add: DemoMessages['add'],
  traffic: {
    readonly caseIds: readonly string[];
    readonly count: number;
    readonly payment: (index: number) => Envelope;
    readonly deadlinesViaOutbox: boolean;
  },
): { payments: string[]; paymentCount: number } {
  const deadlines = traffic.caseIds.flatMap((caseId) => [
    deadlineEnvelope(caseId, 'INVESTIGATION'),
    deadlineEnvelope(caseId, 'REVIEW'),
  ]);
  const payments: string[] = [];
  let paymentCount = 0;
  for (let i = 0; i < traffic.count; i += 1) {
    const next = i % 5 === 1 ? deadlines.shift() : undefined;
    if (next) add('normal', next, 1, traffic.deadlinesViaOutbox);
    else payments.push(add('normal', traffic.payment(++paymentCount)));
  }
  return { payments, paymentCount };
}

/**
 * The failure cases every store's demo sends: duplicates of the `payments`, the same key with another payload,
 * poison, and terminal failures (one on the regular case `caseId`).
 */
function addFailureCases(
  add: DemoMessages['add'],
  runId: string,
  cases: {
    readonly payments: readonly string[];
    readonly payment: (index: number, amount?: number) => Envelope;
    readonly caseId: string;
  },
): void {
  // Duplicates: 10 % of the payments delivered twice (a producer retry or an SQS redelivery).
  for (const body of cases.payments.filter((_, i) => i % 10 === 3)) add('duplicate', body);
  // Same key, different payload: payment 1 again with another amount (after payment 1 is applied).
  add('same-key-different-payload', cases.payment(1, 999_999), 2);
  // Poison: not JSON, and an envelope of a type nobody handles.
  add('poison', `{"messageId": "${runId}-broken", this is not json`);
  add(
    'poison',
    exampleEnvelope({
      messageType: 'CaseArchivedV0',
      idempotencyKey: `${runId}-unknown-type`,
      aggregateType: 'Case',
      aggregateId: 'x',
      payload: {},
    }),
  );
  // Terminal: a stage without an SLA, and a case that does not exist (retryable by default, since it may arrive
  // later; this producer's attempt policy makes the code terminal at once).
  add('terminal', deadlineEnvelope(cases.caseId, 'CLOSED'));
  add(
    'terminal',
    deadlineEnvelope(`${runId}-case-missing`, 'REVIEW', { terminalAfterCodes: ['CASE_NOT_FOUND'] }),
  );
}
