import type postgres from 'postgres';
import { decodeMessage } from '../../decode-message.ts';
import type { NewerCompletedEvent, NewerCompletedEvents } from '../../newer-completed-events.ts';
import type { QuarantineEntry } from '../../render-quarantine-entry.ts';

/**
 * Finds the events of a quarantined message's aggregate that the same consumer completed after the
 * quarantined message was first seen. Re-sending the quarantined message then delivers an older event
 * after newer ones (normal on a standard queue), which rolls the aggregate's state back unless its handler
 * guards by version; `quarantine release` refuses that without `--force`.
 *
 * "First seen" is the earlier of the inbox row's `first_seen_at` and the entry's `first_quarantined_at`: a
 * message that failed retryably for a while before it failed terminally was first seen long before it was
 * quarantined, and events completed in between are newer too.
 */
export async function findNewerCompletedEvents(
  sql: postgres.Sql | postgres.TransactionSql,
  entry: Pick<QuarantineEntry, 'consumer' | 'idempotencyKey' | 'body' | 'firstQuarantinedAt'>,
  options: { limit?: number } = {},
): Promise<NewerCompletedEvents> {
  const limit = options.limit ?? 5;
  const [inbox] = entry.idempotencyKey
    ? await sql<{ aggregateType: string; aggregateId: string; firstSeenAt: Date }[]>`
        select aggregate_type as "aggregateType", aggregate_id as "aggregateId", first_seen_at as "firstSeenAt"
        from worker_inbox
        where consumer = ${entry.consumer} and idempotency_key = ${entry.idempotencyKey}
      `
    : [];
  let aggregate: NewerCompletedEvents['aggregate'] = null;
  let since = entry.firstQuarantinedAt;
  if (inbox) {
    aggregate = { type: inbox.aggregateType, id: inbox.aggregateId, source: 'inbox' };
    if (inbox.firstSeenAt < since) since = inbox.firstSeenAt;
  } else {
    // Envelope metadata only; decodeMessage never returns the payload.
    const decoded = decodeMessage(entry.body);
    if (decoded.aggregateType && decoded.aggregateId) {
      aggregate = { type: decoded.aggregateType, id: decoded.aggregateId, source: 'envelope' };
    }
  }
  if (!aggregate) return { aggregate, since, count: 0, events: [] };
  const newer = sql`
    from worker_inbox
    where consumer = ${entry.consumer} and aggregate_type = ${aggregate.type} and aggregate_id = ${aggregate.id}
      and status = 'COMPLETED' and completed_at > ${since}
      ${entry.idempotencyKey ? sql`and idempotency_key <> ${entry.idempotencyKey}` : sql``}
  `;
  const [counted] = await sql<{ count: number }[]>`select count(*)::int as count ${newer}`;
  const count = counted?.count ?? 0;
  const rows =
    count > 0 && limit > 0
      ? await sql<NewerCompletedEvent[]>`
          select message_type as "messageType", idempotency_key as "idempotencyKey", completed_at as "completedAt"
          ${newer}
          order by completed_at, idempotency_key
          limit ${limit}
        `
      : [];
  return {
    aggregate,
    since,
    count,
    events: [...rows],
  };
}
