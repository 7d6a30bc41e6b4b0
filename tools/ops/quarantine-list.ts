import type postgres from 'postgres';
import type { OpsOutput } from './output.ts';
import { emit, table } from './output.ts';

/** A quarantine entry without its body. */
export interface QuarantineListEntry {
  readonly quarantineId: string;
  readonly messageType: string | null;
  readonly idempotencyKey: string | null;
  readonly reasonCode: string;
  readonly occurrences: number;
  readonly firstQuarantinedAt: Date;
  readonly lastQuarantinedAt: Date;
  readonly releasedAt: Date | null;
  readonly releasedMessageId: string | null;
}

/** Result of {@link quarantineList}. */
export interface QuarantineListResult {
  readonly consumer: string;
  readonly entries: QuarantineListEntry[];
  /** Entries per reason code among those listed. */
  readonly byReason: Record<string, number>;
}

/**
 * `quarantine list`: quarantined messages of a consumer, newest first, without bodies. By default only
 * entries not released yet; `includeReleased` lists all.
 */
export async function quarantineList(
  deps: { sql: postgres.Sql; out: OpsOutput },
  options: { consumer: string; includeReleased?: boolean; reasonCode?: string; limit?: number },
): Promise<QuarantineListResult> {
  const { sql, out } = deps;
  const entries = await sql<QuarantineListEntry[]>`
    select quarantine_id::text as "quarantineId", message_type as "messageType",
      idempotency_key as "idempotencyKey", reason_code as "reasonCode", occurrences,
      first_quarantined_at as "firstQuarantinedAt", last_quarantined_at as "lastQuarantinedAt",
      released_at as "releasedAt", released_message_id as "releasedMessageId"
    from worker_quarantine
    where consumer = ${options.consumer}
      ${options.includeReleased ? sql`` : sql`and released_at is null`}
      ${options.reasonCode ? sql`and reason_code = ${options.reasonCode}` : sql``}
    order by last_quarantined_at desc, quarantine_id desc
    limit ${options.limit ?? 50}
  `;
  const byReason: Record<string, number> = {};
  for (const entry of entries) byReason[entry.reasonCode] = (byReason[entry.reasonCode] ?? 0) + 1;
  const result: QuarantineListResult = { consumer: options.consumer, entries: [...entries], byReason };
  emit(out, result, () => renderQuarantineList(result, options.includeReleased === true));
  return result;
}

/**
 * The table of `quarantine list` (no bodies), shared by both stores.
 *
 * @internal
 */
export function renderQuarantineList(result: QuarantineListResult, includeReleased: boolean): string {
  const { entries } = result;
  return entries.length === 0
    ? `No ${includeReleased ? '' : 'unreleased '}quarantine entries for consumer ${result.consumer}.`
    : table(
        ['id', 'messageType', 'idempotency key', 'reason', 'occurrences', 'last quarantined', 'released at'],
        entries.map((e) => [
          e.quarantineId,
          e.messageType,
          e.idempotencyKey,
          e.reasonCode,
          e.occurrences,
          e.lastQuarantinedAt,
          e.releasedAt,
        ]),
      );
}
