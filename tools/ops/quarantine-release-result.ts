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
}
