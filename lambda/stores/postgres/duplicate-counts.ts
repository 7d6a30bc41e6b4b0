import type postgres from 'postgres';
import type { DuplicateCopy } from '../../worker/record-store.ts';

/**
 * The `set` items of an inbox claim's `on conflict do update` that count a duplicate on its row, in the claim
 * statement itself (no round trip of its own): when the existing row is COMPLETED with the same request hash, a
 * copy with the row's `last_message_id` is a REDELIVERY (the same SQS message again: its visibility ran out, or the
 * worker crashed between commit and delete) and one with another messageId a RESEND (the producer sent again).
 * `last_duplicate_kind` keeps the latest kind, so the claim's `returning` gives it to the worker (a `returning` sees
 * only the new row). Only the row's last messageId is known: a copy of an older message after a newer one counts as
 * a resend. Every `set` item reads the row as it was (PostgreSQL evaluates them all on the old row), so the
 * comparison sees the previous `last_message_id` whatever the order of the assignments.
 *
 * @internal
 */
export function duplicateCountsSet(sql: postgres.TransactionSql): postgres.PendingQuery<postgres.Row[]> {
  return sql`
    redelivery_count = worker_inbox.redelivery_count + case when worker_inbox.status = 'COMPLETED'
      and worker_inbox.request_hash = excluded.request_hash
      and worker_inbox.last_message_id = excluded.last_message_id then 1 else 0 end,
    resend_count = worker_inbox.resend_count + case when worker_inbox.status = 'COMPLETED'
      and worker_inbox.request_hash = excluded.request_hash
      and worker_inbox.last_message_id is distinct from excluded.last_message_id then 1 else 0 end,
    last_duplicate_kind = case when worker_inbox.status = 'COMPLETED' and worker_inbox.request_hash = excluded.request_hash
      then case when worker_inbox.last_message_id = excluded.last_message_id then 'REDELIVERY' else 'RESEND' end
      else worker_inbox.last_duplicate_kind end
  `;
}

/**
 * The duplicate kind a claim returned (`last_duplicate_kind`), read only for a row found COMPLETED.
 *
 * @internal
 */
export function duplicateCopyOf(kind: string | null | undefined): DuplicateCopy | undefined {
  return kind === 'REDELIVERY' || kind === 'RESEND' ? kind : undefined;
}
