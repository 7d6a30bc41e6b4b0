import type postgres from 'postgres';
import { currentActor } from '../../current-actor.ts';
import type { AuditEntry, AuditTrail } from '../../ops-store.ts';

/** Inserts an audit row and returns its id. */
export async function recordAudit(
  sql: postgres.Sql | postgres.TransactionSql,
  entry: AuditEntry,
  actor: string = currentActor(),
): Promise<string> {
  const [row] = await sql<{ auditId: string }[]>`
    insert into ops_audit (
      action, outcome, consumer, source_queue, target_queue, sqs_message_id, new_message_id,
      idempotency_key, message_type, detail, actor, finished_at
    ) values (
      ${entry.action}, ${entry.outcome}, ${entry.consumer ?? null}, ${entry.sourceQueue ?? null},
      ${entry.targetQueue ?? null}, ${entry.sqsMessageId ?? null}, ${entry.newMessageId ?? null},
      ${entry.idempotencyKey ?? null}, ${entry.messageType ?? null}, ${sql.json((entry.detail ?? {}) as postgres.JSONValue)},
      ${actor}, ${entry.outcome === 'STARTED' ? null : new Date()}
    )
    returning audit_id::text as "auditId"
  `;
  return (row as { auditId: string }).auditId;
}

/** Completes an audit row started with outcome `STARTED`. */
export async function finishAudit(
  sql: postgres.Sql | postgres.TransactionSql,
  auditId: string,
  result: { outcome: 'DONE' | 'FAILED'; newMessageId?: string; detail?: Record<string, unknown> },
): Promise<void> {
  await sql`
    update ops_audit
    set outcome = ${result.outcome},
        new_message_id = coalesce(${result.newMessageId ?? null}, new_message_id),
        detail = detail || ${sql.json((result.detail ?? {}) as postgres.JSONValue)},
        finished_at = now()
    where audit_id = ${auditId}
  `;
}

/** The audit trail of {@link recordAudit} and {@link finishAudit} on `sql`. */
export function postgresAuditTrail(sql: postgres.Sql): AuditTrail {
  return {
    record: (entry, actor) => recordAudit(sql, entry, actor),
    finish: (auditId, result) => finishAudit(sql, auditId, result),
  };
}
