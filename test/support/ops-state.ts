import { createHash, randomUUID } from 'node:crypto';
import type postgres from 'postgres';

/** What {@link seedOpsState} wrote: the consumer, its terminally failed key and its quarantine entry. */
export interface OpsState {
  readonly consumer: string;
  readonly failedKey: string;
  readonly quarantineId: string;
}

/**
 * The state the ops commands work on, for a fresh consumer: a FAILED_TERMINAL inbox row (to rearm), a COMPLETED
 * row finished 30 days ago (to purge) and a quarantined message (to release).
 */
export async function seedOpsState(sql: postgres.Sql): Promise<OpsState> {
  const consumer = `ops-${randomUUID()}`;
  const failedKey = `key-${randomUUID()}`;
  const old = new Date(Date.now() - 30 * 86_400_000);
  for (const [key, status] of [
    [failedKey, 'FAILED_TERMINAL'],
    [`key-${randomUUID()}`, 'COMPLETED'],
  ] as const) {
    await sql`
      insert into worker_inbox (consumer, idempotency_key, message_type, schema_version, aggregate_type,
                                aggregate_id, status, request_hash, receive_count, first_seen_at, last_seen_at,
                                completed_at)
      values (${consumer}, ${key}, 'PaymentCaptured', 1, 'payment', 'PAY-1', ${status}, ${'0'.repeat(64)}, 3,
              ${old}, ${old}, ${status === 'COMPLETED' ? old : null})
    `;
  }
  const bodyHash = createHash('sha256').update(consumer).digest('hex');
  const [quarantined] = await sql<{ id: string }[]>`
    insert into worker_quarantine (consumer, body_hash, body, reason_code, reason_message)
    values (${consumer}, ${bodyHash}, 'body', 'INVALID_ENVELOPE', 'not json')
    returning quarantine_id::text as id
  `;
  return { consumer, failedKey, quarantineId: (quarantined as { id: string }).id };
}
