import type postgres from 'postgres';
import { INBOX_LOCK_SEED } from '../../../../lambda/stores/postgres/inbox.ts';
import { currentActor } from '../../current-actor.ts';
import { completedKeyRefusal, type InboxCancelResult, renderInboxCancel } from '../../inbox-cancel-result.ts';
import { emit, type OpsOutput } from '../../output.ts';
import { recordAudit } from './record-audit.ts';

/** The failure message a cancelled inbox row carries (the operator's reason is kept in the marker and the audit). */
const CANCELLED_MESSAGE = 'cancelled by an operator (sqs-worker inbox cancel)';

/**
 * `inbox cancel <key>` on PostgreSQL: marks a key that is not COMPLETED cancelled, so that no copy of it is ever
 * applied, audited. Two transactions:
 *
 * 1. the marker (`worker_cancelled_keys`), committed at once — a COMPLETED key is refused here. From its commit on,
 *    a claim finds the key CANCELLED (the copy is quarantined, its handler never runs), and a copy that claimed it
 *    before is stopped at its own COMMIT by migration 00013's triggers (rolled back, quarantined);
 * 2. waits for the key's inbox lock (`pg_advisory_xact_lock`, the lock every claim takes: a copy in flight ends
 *    first), then marks the inbox row CANCELLED. Should that copy have committed in the instant between its
 *    trigger's check and its commit, the row is COMPLETED now: the marker is removed, the audit says FAILED and the
 *    cancel is refused as for a completed key.
 *
 * An unknown key gets the marker only: its first copy is claimed CANCELLED and quarantined.
 *
 * @throws OperationError (exit 1) when the key is COMPLETED, or was completed by a copy in flight.
 * @example
 * ```ts
 * await inboxCancel({ sql, out }, { consumer: 'case-worker', idempotencyKey: 'payment:PAY-1', reason: 'refunded' });
 * ```
 */
export async function inboxCancel(
  deps: { sql: postgres.Sql; out: OpsOutput },
  options: { consumer: string; idempotencyKey: string; reason?: string | undefined; actor?: string },
): Promise<InboxCancelResult> {
  const { sql, out } = deps;
  const { consumer, idempotencyKey } = options;
  const actor = options.actor ?? currentActor();
  const reason = options.reason ?? null;
  const marked = await sql.begin(async (tx) => {
    const [row] = await tx<{ status: string }[]>`
      select status from worker_inbox where consumer = ${consumer} and idempotency_key = ${idempotencyKey}
    `;
    if (row?.status === 'COMPLETED') throw completedKeyRefusal(idempotencyKey, '', false);
    const inserted = await tx<{ cancelledAt: Date }[]>`
      insert into worker_cancelled_keys (consumer, idempotency_key, reason, cancelled_by)
      values (${consumer}, ${idempotencyKey}, ${reason}, ${actor})
      on conflict (consumer, idempotency_key) do nothing
      returning cancelled_at as "cancelledAt"
    `;
    return { statusBefore: row?.status ?? null, fresh: inserted[0] };
  });
  const settled = await sql.begin(async (tx) => {
    await tx`
      select pg_advisory_xact_lock(
        hashtextextended(${consumer}::text || chr(31) || ${idempotencyKey}::text, ${INBOX_LOCK_SEED})
      )
    `;
    const [row] = await tx<{ status: string }[]>`
      select status from worker_inbox
      where consumer = ${consumer} and idempotency_key = ${idempotencyKey} for update
    `;
    const completed = row?.status === 'COMPLETED';
    if (completed) {
      await tx`delete from worker_cancelled_keys where consumer = ${consumer} and idempotency_key = ${idempotencyKey}`;
    } else if (row) {
      await tx`
        update worker_inbox
        set status = 'CANCELLED', failed_at = now(), failure_code = 'CANCELLED', failure_message = ${CANCELLED_MESSAGE}
        where consumer = ${consumer} and idempotency_key = ${idempotencyKey}
      `;
    }
    const auditId = await recordAudit(
      tx,
      {
        action: 'inbox_cancel',
        outcome: completed ? 'FAILED' : 'DONE',
        consumer,
        idempotencyKey,
        detail: {
          inboxStatusBefore: marked.statusBefore,
          alreadyCancelled: marked.fresh === undefined,
          completedWhileCancelling: completed,
          ...(reason ? { reason } : {}),
        },
      },
      actor,
    );
    return { completed, auditId };
  });
  if (settled.completed) throw completedKeyRefusal(idempotencyKey, '', true);
  const result: InboxCancelResult = {
    consumer,
    idempotencyKey,
    inboxStatusBefore: marked.statusBefore,
    alreadyCancelled: marked.fresh === undefined,
    reason,
    actor,
    cancelledAt: (marked.fresh?.cancelledAt ?? new Date()).toISOString(),
    auditId: settled.auditId,
  };
  emit(out, result, () => renderInboxCancel(result, ''));
  return result;
}
