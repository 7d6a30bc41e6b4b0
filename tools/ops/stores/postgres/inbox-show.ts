import type postgres from 'postgres';
import type { AttemptRecord } from '../../../../lambda/attempt-history.ts';
import { OperationError } from '../../errors.ts';
import type { OpsOutput } from '../../output.ts';
import { emit, formatCell, recordTable, table } from '../../output.ts';
import { readAttemptHistory, renderAttemptHistory } from '../../render-attempt-history.ts';

/** An inbox row as `inbox show` reports it (no payload: the inbox stores none). */
export interface InboxRow {
  readonly consumer: string;
  readonly idempotencyKey: string;
  readonly messageType: string;
  readonly schemaVersion: number;
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly status: string;
  readonly requestHash: string;
  readonly attempts: number;
  readonly firstSeenAt: Date;
  readonly lastSeenAt: Date;
  readonly startedAt: Date | null;
  readonly completedAt: Date | null;
  readonly failedAt: Date | null;
  readonly failureCode: string | null;
  readonly failureMessage: string | null;
  readonly resultRef: string | null;
  readonly lastMessageId: string | null;
  readonly correlationId: string | null;
  /**
   * The producer's trace id (`1-…-…`) of the delivery that claimed the row (of the one that completed it, once
   * COMPLETED): search the logs and X-Ray for it (docs/tracing.md). Null for a message sent without a trace.
   */
  readonly traceId: string | null;
  /** The worker version that first saw the key; null for a row written before the inbox kept versions. */
  readonly firstVersion: string | null;
  /** The row's last attempts, oldest first (at most `ATTEMPT_HISTORY_LIMIT`). */
  readonly attemptHistory: AttemptRecord[];
}

/** A quarantine entry summary (the body is left to `quarantine show`). */
export interface QuarantineSummary {
  readonly quarantineId: string;
  readonly reasonCode: string;
  readonly reasonMessage: string;
  readonly occurrences: number;
  readonly firstQuarantinedAt: Date;
  readonly lastQuarantinedAt: Date;
  readonly releasedAt: Date | null;
  readonly releasedMessageId: string | null;
}

/** An ops_audit row about the same key. */
export interface AuditSummary {
  readonly auditId: string;
  readonly action: string;
  readonly outcome: string;
  readonly sqsMessageId: string | null;
  readonly newMessageId: string | null;
  readonly actor: string | null;
  readonly createdAt: Date;
}

/** Result of {@link inboxShow}. */
export interface InboxShowResult {
  readonly consumer: string;
  readonly idempotencyKey: string;
  readonly inbox: InboxRow | null;
  readonly quarantine: QuarantineSummary[];
  readonly audit: AuditSummary[];
}

/**
 * `inbox show <key>`: the inbox row of one idempotency key (status, attempts, failure, the producer's trace
 * id, the worker version that first saw it), its attempt history, its quarantine entries and the operator actions
 * recorded for it.
 *
 * @throws OperationError (exit 1) when the key is neither in the inbox nor in quarantine.
 * @example
 * ```ts
 * await inboxShow({ sql, out }, { consumer: 'case-worker', idempotencyKey: 'case:C-1:stage:v3' });
 * ```
 */
export async function inboxShow(
  deps: { sql: postgres.Sql; out: OpsOutput },
  options: { consumer: string; idempotencyKey: string },
): Promise<InboxShowResult> {
  const { sql, out } = deps;
  const { consumer, idempotencyKey } = options;
  const [row] = await sql<InboxRow[]>`
    select consumer, idempotency_key as "idempotencyKey", message_type as "messageType",
      schema_version as "schemaVersion", aggregate_type as "aggregateType", aggregate_id as "aggregateId",
      status, request_hash as "requestHash", receive_count as attempts, first_seen_at as "firstSeenAt",
      last_seen_at as "lastSeenAt", started_at as "startedAt", completed_at as "completedAt",
      failed_at as "failedAt", failure_code as "failureCode", failure_message as "failureMessage",
      result_ref as "resultRef", last_message_id as "lastMessageId", correlation_id as "correlationId",
      trace_id as "traceId", first_version as "firstVersion", attempt_history as "attemptHistory"
    from worker_inbox
    where consumer = ${consumer} and idempotency_key = ${idempotencyKey}
  `;
  const inbox = row ? { ...row, attemptHistory: readAttemptHistory(row.attemptHistory) } : undefined;
  const quarantine = await sql<QuarantineSummary[]>`
    select quarantine_id::text as "quarantineId", reason_code as "reasonCode",
      reason_message as "reasonMessage", occurrences, first_quarantined_at as "firstQuarantinedAt",
      last_quarantined_at as "lastQuarantinedAt", released_at as "releasedAt",
      released_message_id as "releasedMessageId"
    from worker_quarantine
    where consumer = ${consumer} and idempotency_key = ${idempotencyKey}
    order by quarantine_id
  `;
  const audit = await sql<AuditSummary[]>`
    select audit_id::text as "auditId", action, outcome, sqs_message_id as "sqsMessageId",
      new_message_id as "newMessageId", actor, created_at as "createdAt"
    from ops_audit
    where idempotency_key = ${idempotencyKey} and (consumer = ${consumer} or consumer is null)
    order by audit_id
  `;
  if (!inbox && quarantine.length === 0) {
    throw new OperationError(
      `No inbox row or quarantine entry for idempotency key "${idempotencyKey}" of consumer "${consumer}". ` +
        'Check the key (it is the envelope idempotencyKey, not the SQS message id) and --consumer / WORKER_CONSUMER.',
    );
  }
  const result: InboxShowResult = {
    consumer,
    idempotencyKey,
    inbox: inbox ?? null,
    quarantine: [...quarantine],
    audit: [...audit],
  };
  emit(out, result, () => {
    const parts: string[] = [];
    if (inbox) {
      const { attemptHistory, ...fields } = inbox;
      parts.push(recordTable(fields), renderAttemptHistory(attemptHistory));
    } else parts.push(`No inbox row for "${idempotencyKey}" (consumer ${consumer}).`);
    if (quarantine.length > 0) {
      parts.push(
        'Quarantine:',
        table(
          ['id', 'reason', 'occurrences', 'last quarantined', 'released at', 'released message'],
          quarantine.map((q) => [
            q.quarantineId,
            q.reasonCode,
            q.occurrences,
            q.lastQuarantinedAt,
            q.releasedAt,
            q.releasedMessageId,
          ]),
        ),
      );
    }
    if (audit.length > 0) {
      parts.push(
        'Operator actions:',
        table(
          ['audit id', 'action', 'outcome', 'message', 'new message', 'actor', 'at'],
          audit.map((a) => [
            a.auditId,
            a.action,
            a.outcome,
            a.sqsMessageId,
            a.newMessageId,
            a.actor,
            formatCell(a.createdAt),
          ]),
        ),
      );
    }
    return parts.join('\n');
  });
  return result;
}
