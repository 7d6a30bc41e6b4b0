import { createHash } from 'node:crypto';
import type { SQSRecord } from 'aws-lambda';
import type postgres from 'postgres';
import { ENVELOPE_LIMITS } from '../../worker/envelope.ts';
import type { QuarantineReason } from '../../worker/quarantine-reason.ts';

const fits = (value: string | undefined, max: number) =>
  typeof value === 'string' && value.length > 0 && value.length <= max ? value : null;

/**
 * Keeps a terminal message for investigation (DESIGN.md `worker_quarantine`): raw body, SQS attributes and
 * message attributes, reason. Bodies that are not JSON or have no key are kept too. The same body of the
 * same consumer is stored once, counting occurrences; a message quarantined again after a release becomes
 * active again. `worker_version` is the worker version that quarantined it (the latest time).
 *
 * @returns the quarantine id.
 *
 * @internal
 */
export async function quarantineMessage(
  sql: postgres.Sql | postgres.TransactionSql,
  input: { consumer: string; record: SQSRecord; reason: QuarantineReason; workerVersion?: string },
): Promise<number> {
  const { record, reason } = input;
  const bodyHash = createHash('sha256')
    .update(record.body ?? '')
    .digest('hex');
  const [row] = await sql<{ quarantine_id: string }[]>`
    insert into worker_quarantine (
      consumer, body_hash, body, sqs_message_id, idempotency_key, message_type,
      reason_code, reason_message, sqs_attributes, message_attributes, event_source_arn, worker_version
    ) values (
      ${input.consumer}, ${bodyHash}, ${record.body ?? ''}, ${record.messageId},
      ${fits(reason.idempotencyKey, ENVELOPE_LIMITS.idempotencyKey)}, ${fits(reason.messageType, ENVELOPE_LIMITS.messageType)},
      ${reason.code}, ${reason.message}, ${sql.json(JSON.parse(JSON.stringify(record.attributes ?? {})))},
      ${sql.json(JSON.parse(JSON.stringify(record.messageAttributes ?? {})))}, ${record.eventSourceARN ?? null},
      ${input.workerVersion ?? null}
    )
    on conflict (consumer, body_hash) do update
      set occurrences = worker_quarantine.occurrences + 1,
          last_quarantined_at = now(),
          sqs_message_id = excluded.sqs_message_id,
          reason_code = excluded.reason_code,
          reason_message = excluded.reason_message,
          sqs_attributes = excluded.sqs_attributes,
          worker_version = excluded.worker_version,
          released_at = null
    returning quarantine_id
  `;
  return Number(row?.quarantine_id);
}
