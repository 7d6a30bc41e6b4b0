import type postgres from 'postgres';
import { OperationError } from './errors.ts';
import { findNewerCompletedEvents, type NewerCompletedEvents } from './newer-completed-events.ts';
import type { Cell, OpsOutput } from './output.ts';
import { emit, recordTable } from './output.ts';

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
}

/** Result of {@link quarantineShow}: the entry and what a release would re-send it after. */
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

/** Reads one quarantine entry (body included), or throws when there is none. */
export async function loadQuarantineEntry(
  sql: postgres.Sql | postgres.TransactionSql,
  quarantineId: string,
  options: { forUpdate?: boolean } = {},
): Promise<QuarantineEntry> {
  if (!/^\d{1,18}$/.test(quarantineId)) {
    throw new OperationError(
      `Quarantine id must be a number as "quarantine list" shows it (given "${quarantineId}")`,
    );
  }
  const [entry] = await sql<QuarantineEntry[]>`
    select quarantine_id::text as "quarantineId", consumer, body_hash as "bodyHash", body,
      sqs_message_id as "sqsMessageId", idempotency_key as "idempotencyKey", message_type as "messageType",
      reason_code as "reasonCode", reason_message as "reasonMessage", sqs_attributes as "sqsAttributes",
      message_attributes as "messageAttributes", event_source_arn as "eventSourceArn", occurrences,
      first_quarantined_at as "firstQuarantinedAt", last_quarantined_at as "lastQuarantinedAt",
      released_at as "releasedAt", released_message_id as "releasedMessageId"
    from worker_quarantine
    where quarantine_id = ${quarantineId}
    ${options.forUpdate ? sql`for update` : sql``}
  `;
  if (!entry) {
    throw new OperationError(
      `No quarantine entry ${quarantineId}; "sqs-worker quarantine list --all" lists them.`,
    );
  }
  return entry;
}

/**
 * `quarantine show <id>`: one quarantined message with its reason, SQS attributes, message attributes and
 * its BODY. This is the one command that prints payload values, because the operator asked for this
 * message to diagnose it; do not paste its output into tickets or chat without redacting.
 *
 * It also counts the events of the message's aggregate that the consumer completed after the message was
 * first seen, so the operator sees before a release that it would re-send an older event after newer ones.
 *
 * @throws OperationError (exit 1) when the id does not exist.
 */
export async function quarantineShow(
  deps: { sql: postgres.Sql; out: OpsOutput },
  options: { quarantineId: string },
): Promise<QuarantineShowResult> {
  const entry = await loadQuarantineEntry(deps.sql, options.quarantineId);
  const newer = await findNewerCompletedEvents(deps.sql, entry, { limit: 0 });
  const result: QuarantineShowResult = { ...entry, ...newerEventsFields(newer) };
  emit(deps.out, result, () => {
    const { body: _body, sqsAttributes: _sqs, messageAttributes: _attributes, ...fields } = result;
    return renderQuarantineEntry(fields, result, [newerLine(result, newer.since)]);
  });
  return result;
}

/** The line about newer completed events of the aggregate (no payload values). */
function newerLine(result: QuarantineShowResult, since: Date): string {
  if (result.newerCompletedEvents === null) {
    return 'Newer completed events: unknown (no inbox row and no aggregateType/aggregateId in the body).';
  }
  const of = `of ${result.aggregateType} "${result.aggregateId}" completed after this message was first seen (${since.toISOString()})`;
  return result.newerCompletedEvents === 0
    ? `Newer completed events ${of}: 0.`
    : `Newer completed events ${of}: ${result.newerCompletedEvents}. "quarantine release ${result.quarantineId}" ` +
        'lists them and refuses without --force: this older event would be applied after them.';
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
