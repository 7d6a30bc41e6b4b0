import type { NewerCompletedEvents } from './newer-completed-events.ts';

/** What `quarantine release` reports, on either store. */
export interface QuarantineReleaseResult {
  readonly quarantineId: string;
  readonly idempotencyKey: string | null;
  readonly messageType: string | null;
  readonly releasedMessageId: string;
  readonly queueUrl: string;
  /** Inbox status before the release (null: no row), and whether it was re-armed. */
  readonly inboxStatusBefore: string | null;
  readonly inboxRearmed: boolean;
  /** The aggregate of the message (null: neither its inbox row nor its body names one, nothing was checked). */
  readonly aggregate: NewerCompletedEvents['aggregate'];
  /** Events of the same aggregate the consumer completed after the message was first seen (released past them only with `force`). */
  readonly newerCompletedEvents: number;
  /** True when `force` was given. */
  readonly forced: boolean;
  readonly auditId: string;
  /**
   * An edited release (`--edit`): the key the corrected body was sent under, and the sha256 of both bodies (the audit
   * keeps these, never a body); absent for a plain release.
   */
  readonly edit?: {
    readonly releasedAsKey: string;
    readonly originalBodyHash: string;
    readonly editedBodyHash: string;
    /** True when `--force-edit` let another messageType or aggregate through. */
    readonly forced: boolean;
  };
}
