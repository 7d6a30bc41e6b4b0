import { createHash } from 'node:crypto';
import type { SQSRecord } from 'aws-lambda';
import { exampleEnvelope } from '../../tools/local/example-envelope.ts';

/** The mix of a soak run (see {@link soakMessages}). */
export interface SoakMix {
  /** `PaymentCaptured` messages `soak-pay-0…`, on accounts `acct-0` to `acct-<accounts − 1>`, amount index + 1. */
  readonly payments: number;
  readonly accounts: number;
  /** `CaseDeadlineCalculationRequested` messages for the cases `soak-case-1…` (they must exist). */
  readonly deadlines: number;
  /** Bodies that are not JSON. */
  readonly poison: number;
  /** Deadline requests for cases that do not exist, made terminal by their attempt policy. */
  readonly terminal: number;
  /** Copies of effectful messages, interleaved with the first copies. */
  readonly duplicates: number;
}

/** The bodies of a soak run, returned by {@link soakMessages}. */
export interface SoakMessages {
  /** Every body to send, in sending order. */
  readonly bodies: string[];
  /**
   * Hooks of the local event source mapping and poller: 5 % of the first deliveries of effectful messages (chosen
   * by message id) crash between the commit and the delete.
   */
  readonly hooks: { readonly dropDeleteAfterSuccess: (record: SQSRecord) => boolean };
}

/**
 * The local event source mapping of the soak runs, the same on every store: batches of 10 within 20 ms, two pollers,
 * four invocations at once, a 10 s function timeout.
 */
export const SOAK_MAPPING = {
  batchSize: 10,
  maxBatchingWindowMs: 20,
  maxConcurrency: 4,
  pollers: 2,
  waitTimeSeconds: 1,
  functionTimeoutMs: 10_000,
} as const;

/** A soak message's body: the example envelope of aggregate type `Soak`. */
export function soakEnvelope(
  messageType: string,
  key: string,
  aggregateId: string,
  payload: Record<string, unknown>,
): string {
  return JSON.stringify(
    exampleEnvelope({ messageType, idempotencyKey: key, aggregateType: 'Soak', aggregateId, payload }),
  );
}

const hashOf = (text: string) => createHash('sha256').update(text).digest();

/**
 * The bodies of the soak tests, the same on every store: effectful, poison and terminal messages, then `extra`
 * (a store's own cases), with the duplicates interleaved so that they often arrive while their first copy is in
 * flight.
 */
export function soakMessages(mix: SoakMix, extra: readonly string[] = []): SoakMessages {
  const effectful = [
    ...Array.from({ length: mix.payments }, (_, i) =>
      soakEnvelope('PaymentCaptured', `soak-pay-${i}`, `p-${i}`, {
        paymentId: `soak-pay-${i}`,
        accountId: `acct-${i % mix.accounts}`,
        amount: i + 1,
        currency: 'EUR',
      }),
    ),
    ...Array.from({ length: mix.deadlines }, (_, i) =>
      soakEnvelope('CaseDeadlineCalculationRequested', `soak-deadline-${i + 1}`, `soak-case-${i + 1}`, {
        caseId: `soak-case-${i + 1}`,
        stage: 'REVIEW',
        effectiveAt: '2026-07-06T10:15:30Z',
      }),
    ),
  ];
  const poison = Array.from({ length: mix.poison }, (_, i) => `soak poison ${i} {`);
  // A missing case is retryable by default (it may arrive later); these producers make it terminal at once.
  const terminal = Array.from({ length: mix.terminal }, (_, i) => {
    const body = JSON.parse(
      soakEnvelope('CaseDeadlineCalculationRequested', `soak-missing-${i}`, `missing-${i}`, {
        caseId: `soak-missing-case-${i}`,
        stage: 'REVIEW',
        effectiveAt: '2026-07-06T10:15:30Z',
      }),
    );
    return JSON.stringify({ ...body, attemptPolicy: { terminalAfterCodes: ['CASE_NOT_FOUND'] } });
  });
  const duplicates = Array.from(
    { length: mix.duplicates },
    (_, i) => effectful[(i * 7) % effectful.length] as string,
  );
  const bodies = [...effectful, ...poison, ...terminal, ...extra];
  for (const [i, body] of duplicates.entries()) bodies.splice(Math.min(bodies.length, i * 3 + 5), 0, body);

  const effectfulBodies = new Set(effectful);
  const crashes = (messageId: string) => (hashOf(messageId)[0] as number) < 256 * 0.05;
  return {
    bodies,
    hooks: {
      dropDeleteAfterSuccess: (record) =>
        record.attributes.ApproximateReceiveCount === '1' &&
        effectfulBodies.has(record.body) &&
        crashes(record.messageId),
    },
  };
}
