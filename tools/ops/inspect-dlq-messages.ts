import type { Message } from '@aws-sdk/client-sqs';
import type postgres from 'postgres';
import type { DecodedMessage } from './decode-message.ts';
import { decodeMessage } from './decode-message.ts';

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
  /** Grouping key: messageType, or "(unknown)" when the body carries none. */
  readonly messageType: string;
  /**
   * Failure code of the fingerprint: `INVALID_ENVELOPE`, the inbox failure code, `NO_INBOX_ROW` when the
   * worker never recorded the key, or the inbox status (e.g. `COMPLETED`: a redrive would be a duplicate no-op).
   */
  readonly code: string;
}

/**
 * Decodes DLQ messages and joins the inbox rows of their idempotency keys (one query).
 */
export async function inspectDlqMessages(
  sql: postgres.Sql,
  consumer: string,
  messages: readonly Message[],
): Promise<DlqEntry[]> {
  const decoded = messages.map((message) => decodeMessage(message.Body));
  const keys = [...new Set(decoded.flatMap((d) => (d.idempotencyKey ? [d.idempotencyKey] : [])))];
  const rows =
    keys.length === 0
      ? []
      : await sql<{ key: string; status: string; failureCode: string | null; attempts: number }[]>`
          select idempotency_key as key, status, failure_code as "failureCode", receive_count as attempts
          from worker_inbox
          where consumer = ${consumer} and idempotency_key in ${sql(keys)}
        `;
  const inbox = new Map(rows.map((row) => [row.key, row]));
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
      messageType: d.messageType ?? '(unknown)',
      code,
    };
  });
}
