import type { NewerCompletedEvents } from './newer-completed-events.ts';
import type { Cell } from './output.ts';
import { recordTable } from './output.ts';

/** A full quarantine entry, body included. */
export interface QuarantineEntry {
  readonly quarantineId: string;
  readonly consumer: string;
  readonly bodyHash: string;
  readonly body: string;
  readonly sqsMessageId: string | null;
  readonly idempotencyKey: string | null;
  readonly messageType: string | null;
  readonly reasonCode: string;
  readonly reasonMessage: string;
  readonly sqsAttributes: Record<string, unknown>;
  readonly messageAttributes: Record<string, unknown>;
  readonly eventSourceArn: string | null;
  readonly occurrences: number;
  readonly firstQuarantinedAt: Date;
  readonly lastQuarantinedAt: Date;
  readonly releasedAt: Date | null;
  readonly releasedMessageId: string | null;
  /** The key an edited release sent its corrected body under (`<key>:v2`, …); null for a plain release. */
  readonly releasedAsKey: string | null;
}

/** What `quarantine show` reports: the entry and what a release would re-send it after. */
export interface QuarantineShowResult extends QuarantineEntry {
  /** The message's aggregate (from its inbox row, else its envelope); null when neither names one. */
  readonly aggregateType: string | null;
  readonly aggregateId: string | null;
  /**
   * Events of that aggregate the consumer completed after this message was first seen: a release would
   * apply this older event after them (`quarantine release` refuses without `--force`). Null: no aggregate.
   */
  readonly newerCompletedEvents: number | null;
}

/**
 * The aggregate fields of a `quarantine show` result, from the newer-events check of either store.
 *
 * @internal
 */
export function newerEventsFields(newer: NewerCompletedEvents): {
  aggregateType: string | null;
  aggregateId: string | null;
  newerCompletedEvents: number | null;
} {
  return {
    aggregateType: newer.aggregate?.type ?? null,
    aggregateId: newer.aggregate?.id ?? null,
    newerCompletedEvents: newer.aggregate ? newer.count : null,
  };
}

/**
 * The text of `quarantine show` for either store: the entry's fields, its SQS and message attributes, the store's
 * `notes` (the newer-events line, …), the body's heading and the body (pretty-printed when it is JSON).
 *
 * @internal
 */
export function renderQuarantineEntry(
  fields: Readonly<Record<string, Cell>>,
  entry: { body: string; sqsAttributes: unknown; messageAttributes: unknown },
  notes: readonly string[],
  bodyHeading = 'Body (contains payload values):',
): string {
  let pretty = entry.body;
  try {
    pretty = JSON.stringify(JSON.parse(entry.body), null, 2);
  } catch {
    // not JSON (or cut by the store): shown as stored
  }
  return [
    recordTable(fields),
    `SQS attributes: ${JSON.stringify(entry.sqsAttributes)}`,
    `Message attributes: ${JSON.stringify(entry.messageAttributes)}`,
    ...notes,
    bodyHeading,
    pretty,
  ].join('\n');
}
