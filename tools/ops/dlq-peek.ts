import type { Message } from '@aws-sdk/client-sqs';
import {
  classifyFailures,
  type FailureClass,
  NEVER_ATTEMPTED,
  renderFailureClasses,
} from './classify-failures.ts';
import type { SqsSender } from './collaborators.ts';
import type { DlqEntry } from './inspect-dlq-messages.ts';
import { inspectDlqMessages } from './inspect-dlq-messages.ts';
import type { OpsStore } from './ops-store.ts';
import type { OpsOutput } from './output.ts';
import { emit, table } from './output.ts';
import { receiveBatch, releaseMessages } from './receive-batch.ts';

/** A failure fingerprint: messages of one messageType that failed with one code. */
export interface FailureGroup {
  readonly messageType: string;
  readonly code: string;
  readonly count: number;
  /** Up to three idempotency keys of the group, to look up with `inbox show`. */
  readonly sampleKeys: string[];
}

/** Result of {@link dlqPeek}. */
export interface DlqPeekResult {
  readonly dlqUrl: string;
  readonly peeked: number;
  readonly groups: FailureGroup[];
  /**
   * The messages by failure code and the worker version that first saw their key (`classifyFailures`): a message
   * whose key has no inbox entry is in the {@link NEVER_ATTEMPTED} class.
   */
  readonly classes: FailureClass[];
  readonly messages: Array<
    Omit<DlqEntry, 'decoded'> & { idempotencyKey: string | null; envelopeProblem: string | null }
  >;
  /** Messages whose visibility could not be reset (visible again after the hold). */
  readonly notReleased: number;
}

/**
 * Groups entries by failure fingerprint (messageType + code), largest group first.
 */
export function groupByFingerprint(entries: readonly DlqEntry[]): FailureGroup[] {
  const groups = new Map<
    string,
    { messageType: string; code: string; count: number; sampleKeys: string[] }
  >();
  for (const entry of entries) {
    const id = `${entry.messageType}\u0000${entry.code}`;
    const group = groups.get(id) ?? {
      messageType: entry.messageType,
      code: entry.code,
      count: 0,
      sampleKeys: [],
    };
    group.count += 1;
    const key = entry.decoded.idempotencyKey;
    if (key && group.sampleKeys.length < 3 && !group.sampleKeys.includes(key)) group.sampleKeys.push(key);
    groups.set(id, group);
  }
  return [...groups.values()].sort((a, b) => b.count - a.count || a.messageType.localeCompare(b.messageType));
}

/**
 * `dlq peek [--max N] [--group]`: reads up to N DLQ messages without removing them, decodes their envelopes (metadata
 * only, never the payload), joins the store's inbox status ({@link OpsStore.dlqInbox}: a store without it refuses
 * before anything is received) and groups them by failure fingerprint, and by failure code and first-seen worker
 * version (`classes`). With `group` the text shows only the classes: classify before a redrive.
 *
 * Messages are received with a short visibility timeout (`holdSeconds`), all held until the read is done so
 * none is counted twice, then made visible again with ChangeMessageVisibility 0. Receiving raises each
 * message's ApproximateReceiveCount in the DLQ (harmless unless the DLQ itself has a redrive policy).
 */
export async function dlqPeek(
  deps: { store: OpsStore; sqs: SqsSender; out: OpsOutput },
  options: {
    dlqUrl: string;
    consumer: string;
    max: number;
    holdSeconds?: number;
    waitSeconds?: number;
    /** Print the classes (counts by failure code and first-seen version) instead of every message. */
    group?: boolean;
  },
): Promise<DlqPeekResult> {
  const { sqs, out } = deps;
  const inbox = deps.store.dlqInbox('dlq peek');
  const held: Message[] = [];
  let notReleased = 0;
  let entries: DlqEntry[];
  try {
    while (held.length < options.max) {
      const batch = await receiveBatch(sqs, options.dlqUrl, {
        max: options.max - held.length,
        visibilitySeconds: options.holdSeconds ?? 30,
        waitSeconds: options.waitSeconds ?? 1,
      });
      if (batch.length === 0) break;
      held.push(...batch);
    }
    entries = await inspectDlqMessages(inbox, options.consumer, held);
  } finally {
    notReleased = await releaseMessages(sqs, options.dlqUrl, held);
  }
  const groups = groupByFingerprint(entries);
  const result: DlqPeekResult = {
    dlqUrl: options.dlqUrl,
    peeked: entries.length,
    groups,
    classes: classifyFailures(
      entries.map((entry) => ({
        code: entry.code,
        keys: entry.decoded.idempotencyKey ? [entry.decoded.idempotencyKey] : [],
        inbox: entry.inboxStatus === null ? undefined : { firstVersion: entry.inboxFirstVersion },
      })),
      NEVER_ATTEMPTED,
    ),
    messages: entries.map(({ decoded, ...entry }) => ({
      ...entry,
      idempotencyKey: decoded.idempotencyKey ?? null,
      envelopeProblem: decoded.problem ?? null,
    })),
    notReleased,
  };
  emit(out, result, () => renderDlqPeek(result, options.group === true));
  return result;
}

/** The text of `dlq peek`: the classes alone with `group`, else the fingerprints and every message. */
function renderDlqPeek(result: DlqPeekResult, group: boolean): string {
  if (result.peeked === 0) return `The DLQ is empty (${result.dlqUrl}).`;
  const lines = [`Peeked ${result.peeked} message(s) from ${result.dlqUrl} (left in place).`];
  if (group) {
    lines.push('By failure code and first-seen version:', renderFailureClasses(result.classes));
  } else {
    lines.push(
      'By failure fingerprint:',
      table(
        ['messageType', 'code', 'count', 'sample keys'],
        result.groups.map((g) => [g.messageType, g.code, g.count, g.sampleKeys.join('\n')]),
      ),
      table(
        [
          'sqs message id',
          'messageType',
          'idempotency key',
          'inbox status',
          'code',
          'attempts',
          'receives',
          'sent at',
        ],
        result.messages.map((m) => [
          m.sqsMessageId,
          m.messageType,
          m.idempotencyKey,
          m.inboxStatus,
          m.code,
          m.inboxAttempts,
          m.receiveCount,
          m.sentAt,
        ]),
      ),
    );
  }
  if (result.notReleased > 0)
    lines.push(`${result.notReleased} message(s) stay invisible until their hold ends.`);
  return lines.join('\n');
}
