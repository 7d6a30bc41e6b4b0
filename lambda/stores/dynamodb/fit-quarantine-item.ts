import type { SQSRecord } from 'aws-lambda';
import { ENVELOPE_LIMITS } from '../../worker/envelope.ts';
import type { QuarantineReason } from '../../worker/quarantine-reason.ts';
import { cutUtf8 } from './cut-utf8.ts';
import {
  MAX_ARN_BYTES,
  MAX_FAILURE_CODE_BYTES,
  MAX_FAILURE_MESSAGE_BYTES,
  MAX_LISTED_DROPPED,
  MAX_LISTED_NAME_BYTES,
  MAX_MESSAGE_ID_BYTES,
  MAX_QUARANTINE_BODY_BYTES,
  QUARANTINE_RESERVED_BYTES,
} from './item-bounds.ts';
import type { ItemKey } from './item-keys.ts';
import { DYNAMODB_MAX_ITEM_BYTES, dynamoItemSize, dynamoValueSize } from './item-size.ts';

/**
 * A quarantine item's attributes, each within its bound, and the item's size.
 *
 * @internal
 */
export interface FittedQuarantineItem {
  /** What the quarantine write sets (besides `firstQuarantinedAt` and `occurrences`). */
  readonly attributes: Readonly<Record<string, unknown>>;
  /** The item's size as DynamoDB counts it (`dynamoItemSize`), with its key, `firstQuarantinedAt` and `occurrences`. */
  readonly size: number;
}

/** An attribute of a map that may be dropped: its name and what keeping it costs. */
interface Droppable {
  readonly name: string;
  readonly bytes: number;
}

const utf8 = (text: string) => Buffer.byteLength(text, 'utf8');
const fits = (value: string | undefined, max: number) =>
  typeof value === 'string' && value.length > 0 && value.length <= max ? value : undefined;
/** The most `occurrences` can cost (a safe integer). */
const LARGEST_OCCURRENCES = Number.MAX_SAFE_INTEGER;

/**
 * What a quarantine item keeps of a terminal message so that the item always fits DynamoDB's 400 KB (less
 * {@link QUARANTINE_RESERVED_BYTES} for what other writes add): the body up to 300 KiB (`bodyTruncated`), the
 * reason's code and message, the message id and ARN cut at their bounds (`…`), the key and type only when they fit
 * the envelope's limits (as on PostgreSQL); then the SQS attributes (a map) and the message attributes (their JSON
 * text) whole while the item fits, else the largest of the message attributes, then of the SQS attributes, are
 * dropped until it does — named in `messageAttributesDropped` / `sqsAttributesDropped` (at most 10 names, then how
 * many more), both always written so an earlier occurrence's list never stays behind.
 *
 * The body comes first because it is what an operator needs to see; attributes fill the room left (at least
 * ~80 KB). By the bounds above the item without any attribute is under 330 KB; should it still not fit (only an
 * unvalidated, enormous consumer name could do that), the body is cut further.
 *
 * @internal
 */
export function fitQuarantineItem(input: {
  key: ItemKey;
  consumer: string;
  bodyHash: string;
  record: SQSRecord;
  reason: QuarantineReason;
  now: string;
  workerVersion?: string;
}): FittedQuarantineItem {
  const { record, reason } = input;
  const wholeBody = record.body ?? '';
  const body = cutUtf8(wholeBody, MAX_QUARANTINE_BODY_BYTES);
  const idempotencyKey = fits(reason.idempotencyKey, ENVELOPE_LIMITS.idempotencyKey);
  const messageType = fits(reason.messageType, ENVELOPE_LIMITS.messageType);
  const fixed: Record<string, unknown> = {
    consumer: input.consumer,
    bodyHash: input.bodyHash,
    body,
    bodyTruncated: body !== wholeBody,
    sqsMessageId: cutUtf8(record.messageId ?? '', MAX_MESSAGE_ID_BYTES, '…'),
    reasonCode: cutUtf8(reason.code, MAX_FAILURE_CODE_BYTES, '…'),
    reasonMessage: cutUtf8(reason.message, MAX_FAILURE_MESSAGE_BYTES, '…'),
    eventSourceArn: cutUtf8(record.eventSourceARN ?? '', MAX_ARN_BYTES, '…'),
    lastQuarantinedAt: input.now,
    ...(idempotencyKey ? { idempotencyKey } : {}),
    ...(messageType ? { messageType } : {}),
    ...(input.workerVersion ? { workerVersion: input.workerVersion } : {}),
  };
  const sqsAttributes = JSON.parse(JSON.stringify(record.attributes ?? {})) as Record<string, unknown>;
  const messageAttributes = JSON.parse(JSON.stringify(record.messageAttributes ?? {})) as Record<
    string,
    unknown
  >;
  // A map entry costs its name, its value and 1 byte; an entry of the JSON text its quoted name, `:`, its value and
  // at most one comma. Dropping an entry saves that and costs its listed name: `total` never undercounts.
  const sqsEntries = bySizeDown(sqsAttributes, (name, value) => utf8(name) + dynamoValueSize(value) + 1);
  const messageEntries = bySizeDown(
    messageAttributes,
    (name, value) => utf8(JSON.stringify(name)) + 1 + utf8(JSON.stringify(value)) + 1,
  );
  const budget = DYNAMODB_MAX_ITEM_BYTES - QUARANTINE_RESERVED_BYTES;
  let total =
    itemSize(input, fixed, {}, [], '{}', []) +
    sqsEntries.reduce((sum, e) => sum + e.bytes, 0) +
    messageEntries.reduce((sum, e) => sum + e.bytes, 0);
  const droppedMessage: string[] = [];
  const droppedSqs: string[] = [];
  for (const [entries, dropped] of [
    [messageEntries, droppedMessage],
    [sqsEntries, droppedSqs],
  ] as const) {
    for (const entry of entries) {
      if (total <= budget) break;
      total += listedBytes(entry.name, dropped.length) - entry.bytes;
      dropped.push(entry.name);
    }
  }
  for (const name of droppedSqs) delete sqsAttributes[name];
  for (const name of droppedMessage) delete messageAttributes[name];
  const attributes = {
    ...fixed,
    sqsAttributes,
    sqsAttributesDropped: listed(droppedSqs),
    messageAttributes: JSON.stringify(messageAttributes),
    messageAttributesDropped: listed(droppedMessage),
  };
  const size = itemSize(
    input,
    attributes,
    sqsAttributes,
    attributes.sqsAttributesDropped,
    attributes.messageAttributes,
    attributes.messageAttributesDropped,
  );
  if (size <= budget) return { attributes, size };
  const shorter = cutUtf8(body, Math.max(0, utf8(body) - (size - budget)));
  const cut = { ...attributes, body: shorter, bodyTruncated: true };
  return { attributes: cut, size: size - utf8(body) + utf8(shorter) };
}

/** The item's size with these attributes (and the key, `firstQuarantinedAt`, the largest `occurrences`). */
function itemSize(
  input: { key: ItemKey; now: string },
  fixed: Record<string, unknown>,
  sqsAttributes: Record<string, unknown>,
  sqsAttributesDropped: readonly string[],
  messageAttributes: string,
  messageAttributesDropped: readonly string[],
): number {
  return dynamoItemSize({
    ...input.key,
    ...fixed,
    sqsAttributes,
    sqsAttributesDropped,
    messageAttributes,
    messageAttributesDropped,
    firstQuarantinedAt: input.now,
    occurrences: LARGEST_OCCURRENCES,
  });
}

/** A map's entries with what each costs, the most costly first. */
function bySizeDown(
  map: Record<string, unknown>,
  bytes: (name: string, value: unknown) => number,
): Droppable[] {
  return Object.entries(map)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => ({ name, bytes: bytes(name, value) }))
    .sort((a, b) => b.bytes - a.bytes);
}

/** The text of a "… N more" entry, at most this long. */
const MORE_BYTES = 32;

/** What listing the n-th dropped name costs: a list element of its cut name, once "… N more", then nothing. */
function listedBytes(name: string, n: number): number {
  if (n < MAX_LISTED_DROPPED) return 1 + utf8(cutUtf8(name, MAX_LISTED_NAME_BYTES, '…'));
  return n === MAX_LISTED_DROPPED ? 1 + MORE_BYTES : 0;
}

/** The names of dropped attributes as the item lists them: the first 10, cut, and how many more. */
function listed(names: readonly string[]): string[] {
  const shown = names.slice(0, MAX_LISTED_DROPPED).map((name) => cutUtf8(name, MAX_LISTED_NAME_BYTES, '…'));
  const more = names.length - shown.length;
  return more > 0 ? [...shown, `… ${more} more`] : shown;
}
