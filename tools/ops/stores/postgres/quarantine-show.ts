import type postgres from 'postgres';
import { OperationError } from '../../errors.ts';
import type { OpsOutput } from '../../output.ts';
import { emit } from '../../output.ts';
import {
  newerEventsFields,
  type QuarantineEntry,
  type QuarantineShowResult,
  renderQuarantineEntry,
} from '../../render-quarantine-entry.ts';
import { findNewerCompletedEvents } from './find-newer-completed-events.ts';

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
      released_at as "releasedAt", released_message_id as "releasedMessageId", released_as_key as "releasedAsKey"
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
