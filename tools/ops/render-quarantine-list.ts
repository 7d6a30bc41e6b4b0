import { type FailureClass, renderFailureClasses } from './classify-failures.ts';
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
  /** The worker version that quarantined the message (the latest time); null before versions were kept. */
  readonly workerVersion: string | null;
  /** The worker version that first saw the key (its inbox entry's); null without one, or before versions were kept. */
  readonly firstVersion: string | null;
}

/** What `quarantine list` reports, on either store. */
export interface QuarantineListResult {
  readonly consumer: string;
  readonly entries: QuarantineListEntry[];
  /** Entries per reason code among those listed. */
  readonly byReason: Record<string, number>;
  /**
   * With `--group`: every matching entry (not only those listed) by reason code and the worker version that first saw
   * its key (`classifyFailures`; a key without an inbox entry is its own class).
   */
  readonly classes?: FailureClass[];
}

/**
 * The table of `quarantine list` (no bodies), shared by both stores.
 *
 * @internal
 */
export function renderQuarantineList(result: QuarantineListResult, includeReleased: boolean): string {
  const { entries } = result;
  const listed =
    entries.length === 0
      ? `No ${includeReleased ? '' : 'unreleased '}quarantine entries for consumer ${result.consumer}.`
      : table(
          [
            'id',
            'messageType',
            'idempotency key',
            'reason',
            'occurrences',
            'last quarantined',
            'released at',
            'first seen by',
            'quarantined by',
          ],
          entries.map((e) => [
            e.quarantineId,
            e.messageType,
            e.idempotencyKey,
            e.reasonCode,
            e.occurrences,
            e.lastQuarantinedAt,
            e.releasedAt,
            e.firstVersion,
            e.workerVersion,
          ]),
        );
  if (!result.classes || result.classes.length === 0) return listed;
  return [
    listed,
    'By reason code and first-seen version (every matching entry):',
    renderFailureClasses(result.classes),
  ].join('\n');
}
