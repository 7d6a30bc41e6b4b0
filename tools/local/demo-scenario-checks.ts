import type { RecordOutcome } from '../../lambda/worker/outcome.ts';
import type { ScenarioCase, ScenarioMessage } from './demo-messages.ts';
import type { DemoCheck, DemoSummary } from './demo-scenario.ts';

/**
 * Counts `items` by `key`.
 *
 * @internal
 */
export function countBy<T>(items: readonly T[], key: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
  return counts;
}

/**
 * The first check of every demo run: each message has its effect, its quarantine entry or its DLQ copy, and the
 * run met no other problem; what is missing is counted by scenario case.
 *
 * @internal
 */
export function accountedCheck(
  unaccounted: readonly ScenarioMessage[],
  problems: readonly string[],
  total: number,
): DemoCheck {
  const ok = unaccounted.length === 0 && problems.length === 0;
  return {
    name: 'every message is accounted for (effect, quarantine or DLQ)',
    ok,
    detail: ok
      ? `${total} sent, 0 unaccounted`
      : `${unaccounted.length} unaccounted (${Object.entries(countBy(unaccounted, (m) => m.kind))
          .map(([kind, n]) => `${kind} ${n}`)
          .join(', ')}); ${problems.join('; ') || 'no other problem'}`,
  };
}

/**
 * How many times the outbox relay sent an event again: SQS messages carrying a relayed key beyond the relay's one
 * and the scenario's own sends of that key. A relay sends again when it cannot tell that a send succeeded (its
 * PUBLISHED mark failed or timed out, or two runs of one stream record raced): at least once, by design, and the
 * consumer's inbox acknowledges the copy as a DUPLICATE on its first delivery.
 *
 * @internal
 */
export function relayResends(
  outcomes: readonly Pick<RecordOutcome, 'idempotencyKey' | 'messageId'>[],
  messages: readonly ScenarioMessage[],
): number {
  const relayed = new Set(messages.filter((m) => m.viaOutbox && m.key).map((m) => m.key as string));
  const direct = countBy(
    messages.filter((m) => !m.viaOutbox && m.key && relayed.has(m.key)),
    (m) => m.key as string,
  );
  const messageIds = new Map<string, Set<string>>();
  for (const outcome of outcomes) {
    if (!outcome.idempotencyKey || !relayed.has(outcome.idempotencyKey)) continue;
    const ids = messageIds.get(outcome.idempotencyKey) ?? new Set<string>();
    ids.add(outcome.messageId);
    messageIds.set(outcome.idempotencyKey, ids);
  }
  let resends = 0;
  for (const [key, ids] of messageIds) resends += Math.max(0, ids.size - 1 - (direct[key] ?? 0));
  return resends;
}

/**
 * The duplicates check of every demo run. A DUPLICATE on a first delivery (receive count 1) can only be a
 * duplicate the scenario sent or an event the outbox relay sent again ({@link relayResends}); every other one is a
 * redelivery: a crash after commit (a dropped delete), or — on a busy machine — a batch that outlasted the queue's
 * 3 s visibility timeout, which SQS delivers again as it would in AWS. So the check holds when no first delivery was
 * wrongly a DUPLICATE and every duplicate and crash gave one; a redelivery beyond those is counted, not failed (the
 * one-effect checks prove it applied nothing twice).
 *
 * @internal
 */
export function duplicatesCheck(
  outcomes: readonly Pick<RecordOutcome, 'result' | 'receiveCount' | 'idempotencyKey' | 'messageId'>[],
  expected: {
    readonly duplicates: number;
    readonly crashes: number;
    /** The scenario's messages, to tell the relay's repeated sends (@default none relayed) */
    readonly messages?: readonly ScenarioMessage[];
  },
): DemoCheck {
  const all = outcomes.filter((outcome) => outcome.result === 'DUPLICATE');
  const first = all.filter((outcome) => outcome.receiveCount <= 1).length;
  const resent = expected.messages ? relayResends(outcomes, expected.messages) : 0;
  const beyond = all.length - expected.duplicates - expected.crashes - resent;
  const sources = [
    `${expected.duplicates} duplicates`,
    `${expected.crashes} crashes after commit`,
    ...(resent > 0 ? [`${resent} sent again by the outbox relay`] : []),
  ].join(' + ');
  return {
    name: 'duplicates and redeliveries after a crash are no-ops',
    ok: first <= expected.duplicates + resent && beyond >= 0,
    detail: `${all.length} DUPLICATE = ${sources}${beyond > 0 ? ` + ${beyond} redelivered after the visibility timeout` : beyond < 0 ? ` − ${-beyond} missing` : ''}${first > expected.duplicates + resent ? `; ${first - expected.duplicates - resent} first deliveries wrongly DUPLICATE` : ''}`,
  };
}

/**
 * The quarantine check of every demo run, from the reason codes of its quarantine rows or items: poison, terminal,
 * mismatched and broken-reference messages are quarantined, each once.
 *
 * @internal
 */
export function quarantineCheck(
  reasonCodes: readonly string[],
  byKind: Readonly<Record<ScenarioCase, number>>,
): DemoCheck {
  const expected =
    byKind.poison +
    byKind.terminal +
    byKind['same-key-different-payload'] +
    (byKind['payload-ref-broken'] ?? 0);
  return {
    name: 'poison, terminal and mismatched messages are quarantined, not retried',
    ok: reasonCodes.length === expected,
    detail: `${reasonCodes.length} quarantined (${Object.entries(countBy(reasonCodes, (code) => code))
      .map(([code, n]) => `${code} ${n}`)
      .join(', ')})`,
  };
}

/**
 * The payloadRef check of every demo run with S3: the two documents stored once each, the big payment offloaded by
 * the outbox (its application is the ledger's and the outbox's checks), the wrong checksum and the missing object
 * quarantined with their codes.
 *
 * @internal
 */
export function payloadRefCheck(figures: {
  readonly documents: number;
  readonly offloaded: number;
  readonly reasonCodes: readonly string[];
}): DemoCheck {
  const { documents, offloaded, reasonCodes } = figures;
  const count = (code: string) => reasonCodes.filter((r) => r === code).length;
  return {
    name: 'referenced payloads: verified before the handler, stored once, bad references quarantined',
    ok:
      documents === 2 &&
      offloaded === 1 &&
      count('PAYLOAD_CHECKSUM_MISMATCH') === 1 &&
      count('PAYLOAD_NOT_FOUND') === 1,
    detail: `${documents} documents, ${offloaded} outbox event offloaded to S3, ${
      reasonCodes.filter((r) => r.startsWith('PAYLOAD_')).length
    } bad references quarantined`,
  };
}

/**
 * The summary's payloadRef figures of every demo run: the messages sent by reference (or offloaded), the outbox
 * events offloaded, and the quarantine's `PAYLOAD_*` codes.
 *
 * @internal
 */
export function payloadFigures(
  byKind: Readonly<Record<ScenarioCase, number>>,
  offloaded: number,
  reasonCodes: readonly string[],
): DemoSummary['payloads'] {
  return {
    referenced: (byKind['payload-ref'] ?? 0) + (byKind['payload-ref-broken'] ?? 0),
    offloadedByOutbox: offloaded,
    quarantined: countBy(
      reasonCodes.filter((code) => code.startsWith('PAYLOAD_')),
      (code) => code,
    ),
  };
}
