import { table } from './output.ts';

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

/** What `quarantine list` reports, on either store. */
export interface QuarantineListResult {
  readonly consumer: string;
  readonly entries: QuarantineListEntry[];
  /** Entries per reason code among those listed. */
  readonly byReason: Record<string, number>;
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
