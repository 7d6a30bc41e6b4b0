import type { Message } from '@aws-sdk/client-sqs';
import type { DecodedMessage } from './decode-message.ts';
import { decodeMessage } from './decode-message.ts';
import type { DlqInbox } from './ops-store.ts';

/** A DLQ message as the ops commands see it: SQS facts, envelope metadata and the inbox status. */
export interface DlqEntry {
  readonly sqsMessageId: string;
  readonly sentAt: string | null;
  /** ApproximateReceiveCount (deliveries of this copy, including ones to the source queue). */
  readonly receiveCount: number | null;
  readonly messageGroupId: string | null;
  readonly decoded: DecodedMessage;
  readonly inboxStatus: string | null;
  readonly inboxFailureCode: string | null;
  readonly inboxAttempts: number | null;
  /** The worker version that first saw the key (null: no inbox entry, or one written before versions were kept). */
  readonly inboxFirstVersion: string | null;
  /** Grouping key: messageType, or "(unknown)" when the body carries none. */
  readonly messageType: string;
  /**
   * Failure code of the fingerprint: `INVALID_ENVELOPE`, the inbox failure code, `NO_INBOX_ROW` when the
   * worker never recorded the key, or the inbox status (e.g. `COMPLETED`: a redrive would be a duplicate no-op).
   */
  readonly code: string;
}

/**
 * Decodes DLQ messages and joins the store's inbox entries of their idempotency keys (one read).
 */
export async function inspectDlqMessages(
  store: Pick<DlqInbox, 'states'>,
  consumer: string,
  messages: readonly Message[],
): Promise<DlqEntry[]> {
  const decoded = messages.map((message) => decodeMessage(message.Body));
  const keys = [...new Set(decoded.flatMap((d) => (d.idempotencyKey ? [d.idempotencyKey] : [])))];
  const inbox = await store.states(consumer, keys);
  return messages.map((message, index) => {
    const d = decoded[index] as DecodedMessage;
    const row = d.idempotencyKey ? inbox.get(d.idempotencyKey) : undefined;
    const attributes = message.Attributes ?? {};
    const sent = attributes.SentTimestamp ? Number(attributes.SentTimestamp) : Number.NaN;
    let code: string;
    if (!d.valid) code = 'INVALID_ENVELOPE';
    else if (!row) code = 'NO_INBOX_ROW';
    else code = row.failureCode ?? row.status;
    return {
      sqsMessageId: message.MessageId ?? '',
      sentAt: Number.isFinite(sent) ? new Date(sent).toISOString() : null,
      receiveCount: attributes.ApproximateReceiveCount ? Number(attributes.ApproximateReceiveCount) : null,
      messageGroupId: attributes.MessageGroupId ?? null,
      decoded: d,
      inboxStatus: row?.status ?? null,
      inboxFailureCode: row?.failureCode ?? null,
      inboxAttempts: row?.attempts ?? null,
      inboxFirstVersion: row?.firstVersion ?? null,
      messageType: d.messageType ?? '(unknown)',
      code,
    };
  });
}
