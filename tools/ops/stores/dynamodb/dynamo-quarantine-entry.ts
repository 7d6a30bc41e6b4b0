import type { QuarantineEntry } from '../../render-quarantine-entry.ts';

/**
 * An operator's hold on a quarantine item while `quarantine release --store dynamodb` sends it.
 *
 * @internal
 */
export interface ReleaseClaim {
  readonly token: string;
  readonly actor: string;
  /** ISO time the claim was taken. */
  readonly at: string;
  /** Epoch milliseconds after which another release may take the item (the holder died). */
  readonly expiresAt: number;
}

/**
 * A quarantine item of the DynamoDB store in the shape of a `worker_quarantine` row; its id is the body hash
 * (`PK = QUARANTINE#<bodyHash>`, `SK = WORKER#<consumer>`).
 */
export interface DynamoQuarantineEntry extends QuarantineEntry {
  /** True when the stored body was cut at 300 KiB (an item holds 400 KB): it cannot be re-sent as stored. */
  readonly bodyTruncated: boolean;
  /**
   * Names of the message attributes the store did not keep, the largest first, because the item would not have fit
   * 400 KB with them (at most 10, then `… N more`); empty when all were kept. The message cannot be re-sent as stored.
   */
  readonly messageAttributesDropped: readonly string[];
  /** Names of the SQS attributes the store did not keep, as {@link messageAttributesDropped}. */
  readonly sqsAttributesDropped: readonly string[];
  /** A release in progress (or one whose operator died before it finished), else null. */
  readonly releaseClaim: ReleaseClaim | null;
}

const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);
const date = (value: unknown): Date | null => (typeof value === 'string' ? new Date(value) : null);
/** A list of names as stored (absent on items written before the store dropped attributes: nothing dropped). */
const names = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((name): name is string => typeof name === 'string') : [];

/** The message attributes as stored: the JSON text of the Lambda record's `messageAttributes`. */
function messageAttributes(value: unknown): Record<string, unknown> {
  if (value !== null && typeof value === 'object') return value as Record<string, unknown>;
  if (typeof value !== 'string') return {};
  try {
    const parsed: unknown = JSON.parse(value);
    return parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * Reads a quarantine item (as the document client returns it) into an entry. The body is `''` when the item was
 * read without it (`quarantine list` projects it away).
 *
 * @internal
 */
export function toDynamoQuarantineEntry(item: Record<string, unknown>): DynamoQuarantineEntry {
  const bodyHash = String(item.bodyHash ?? String(item.PK).replace(/^QUARANTINE#/, ''));
  const claim = item.releaseClaim as ReleaseClaim | undefined;
  return {
    quarantineId: bodyHash,
    consumer: String(item.consumer ?? String(item.SK).replace(/^WORKER#/, '')),
    bodyHash,
    body: typeof item.body === 'string' ? item.body : '',
    bodyTruncated: item.bodyTruncated === true,
    messageAttributesDropped: names(item.messageAttributesDropped),
    sqsAttributesDropped: names(item.sqsAttributesDropped),
    sqsMessageId: text(item.sqsMessageId),
    idempotencyKey: text(item.idempotencyKey),
    messageType: text(item.messageType),
    reasonCode: String(item.reasonCode),
    reasonMessage: String(item.reasonMessage ?? ''),
    sqsAttributes: (item.sqsAttributes as Record<string, unknown> | undefined) ?? {},
    messageAttributes: messageAttributes(item.messageAttributes),
    eventSourceArn: text(item.eventSourceArn),
    occurrences: Number(item.occurrences ?? 0),
    firstQuarantinedAt: date(item.firstQuarantinedAt) ?? new Date(0),
    lastQuarantinedAt: date(item.lastQuarantinedAt) ?? new Date(0),
    releasedAt: date(item.releasedAt),
    releasedMessageId: text(item.releasedMessageId),
    releasedAsKey: text(item.releasedAsKey),
    releaseClaim: claim && typeof claim.token === 'string' ? claim : null,
  };
}
