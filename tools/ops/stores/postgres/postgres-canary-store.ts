import type postgres from 'postgres';
import type { CanaryCleanup, CanaryStore } from '../../canary-store.ts';

/**
 * The canaries' state in PostgreSQL (`worker_inbox`, `worker_quarantine`) for `sqs-worker smoke`, as the ops
 * database user: it may delete inbox rows, but not quarantine entries (provision-roles.ts), so the poison canary's
 * entry is marked released instead (`released_at`: the health job and the QuarantineAge alarm count open entries
 * only, and the retention job deletes released ones after `quarantineRetention`).
 */
export function postgresCanaryStore(sql: postgres.Sql, consumer: string): CanaryStore {
  return {
    kind: 'postgres',
    recordsDuplicates: true,
    async inbox(key) {
      const [row] = await sql<
        {
          status: string;
          receive_count: number;
          last_message_id: string | null;
          completed_at: Date | null;
          result_ref: string | null;
          failure_code: string | null;
        }[]
      >`
        select status, receive_count, last_message_id, completed_at, result_ref, failure_code
          from worker_inbox
         where consumer = ${consumer} and idempotency_key = ${key}
      `;
      if (!row) return undefined;
      return {
        status: row.status,
        attempts: row.receive_count,
        lastMessageId: row.last_message_id ?? undefined,
        completedAt: row.completed_at?.toISOString(),
        resultRef: row.result_ref ?? undefined,
        failureCode: row.failure_code ?? undefined,
      };
    },
    async quarantined(key) {
      const [row] = await sql<{ quarantine_id: string; reason_code: string }[]>`
        select quarantine_id::text, reason_code
          from worker_quarantine
         where consumer = ${consumer} and idempotency_key = ${key}
         order by quarantine_id desc
         limit 1
      `;
      return row ? { id: row.quarantine_id, reasonCode: row.reason_code } : undefined;
    },
    async remove({ keys, poison }) {
      const cleanup: { removed: string[]; left: string[]; errors: string[] } = {
        removed: [],
        left: [],
        errors: [],
      };
      if (keys.length > 0) {
        try {
          const deleted = await sql<{ idempotency_key: string }[]>`
            delete from worker_inbox
             where consumer = ${consumer} and idempotency_key in ${sql(keys)}
            returning idempotency_key
          `;
          cleanup.removed.push(`${deleted.length} inbox row(s)`);
        } catch (error) {
          cleanup.errors.push(`inbox rows not deleted: ${(error as Error).message}`);
        }
      }
      if (poison) await releasePoison(sql, consumer, poison.key, cleanup);
      return cleanup as CanaryCleanup;
    },
  };
}

async function releasePoison(
  sql: postgres.Sql,
  consumer: string,
  key: string,
  cleanup: { removed: string[]; left: string[]; errors: string[] },
): Promise<void> {
  try {
    const released = await sql<{ quarantine_id: string }[]>`
      update worker_quarantine set released_at = now()
       where consumer = ${consumer} and idempotency_key = ${key} and released_at is null
      returning quarantine_id::text
    `;
    for (const { quarantine_id: id } of released) {
      cleanup.left.push(
        `quarantine entry ${id} marked released (the ops user may not delete it; the retention job does after quarantineRetention)`,
      );
    }
  } catch (error) {
    cleanup.errors.push(`quarantine entry of ${key} not released: ${(error as Error).message}`);
  }
}
