/** What `quarantine show` and `quarantine release` find of newer events of an aggregate (types only). */

/** A completed inbox row or item of the same aggregate (metadata only: the inbox stores no payload). */
export interface NewerCompletedEvent {
  readonly messageType: string;
  readonly idempotencyKey: string;
  readonly completedAt: Date;
}

/** Result of either store's check for newer completed events (what a release would re-send an event after). */
export interface NewerCompletedEvents {
  /**
   * The quarantined message's aggregate: from its inbox row (`inbox`) or, without one, from the envelope
   * fields of its stored body (`envelope`). Null when neither names it: nothing could be checked.
   */
  readonly aggregate: {
    readonly type: string;
    readonly id: string;
    readonly source: 'inbox' | 'envelope';
  } | null;
  /** When the quarantined message was first seen: the earlier of its inbox `first_seen_at` and `first_quarantined_at`. */
  readonly since: Date;
  /** How many inbox rows of the same consumer and aggregate completed after {@link since}. */
  readonly count: number;
  /** The first of them by completion time, at most `limit`. */
  readonly events: NewerCompletedEvent[];
}
