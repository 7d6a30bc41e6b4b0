import type postgres from 'postgres';
import type { DlqInbox, InboxState } from '../../ops-store.ts';
import { rearmInbox } from './rearm-inbox.ts';
import { postgresAuditTrail } from './record-audit.ts';

/**
 * The DLQ commands' view of `worker_inbox` and `ops_audit`: the inbox rows of the DLQ's keys (one query), the re-arm
 * of a redriven key, and the audit rows of each move.
 *
 * The re-arm runs in a transaction that commits only after the send succeeded: a failed send rolls the inbox row
 * back, and a worker that receives the copy before the commit waits on the row lock, then sees it re-armed.
 */
export function postgresDlqInbox(sql: postgres.Sql): DlqInbox {
  return {
    async states(consumer, keys) {
      if (keys.length === 0) return new Map<string, InboxState>();
      const rows = await sql<
        {
          key: string;
          status: string;
          failureCode: string | null;
          attempts: number;
          firstVersion: string | null;
        }[]
      >`
        select idempotency_key as key, status, failure_code as "failureCode", receive_count as attempts,
          first_version as "firstVersion"
        from worker_inbox
        where consumer = ${consumer} and idempotency_key in ${sql(keys)}
      `;
      return new Map(rows.map(({ key, ...state }) => [key, state]));
    },
    async rearmAround(key, send) {
      let rearmed = false;
      await sql.begin(async (tx) => {
        rearmed = (await rearmInbox(tx, key)).rearmed;
        await send();
      });
      return rearmed;
    },
    audit: postgresAuditTrail(sql),
  };
}
