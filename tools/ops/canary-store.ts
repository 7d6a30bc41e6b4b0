/** What `sqs-worker smoke` reads and removes of its canaries in the worker's store (types only). */

/** A canary's inbox row (PostgreSQL) or item (DynamoDB), as the smoke checks need it. */
export interface CanaryInboxState {
  readonly status: string;
  /** Business attempts (DynamoDB `attempts`) or claims (PostgreSQL `receive_count`, a duplicate counts too). */
  readonly attempts: number;
  /** The SQS message id of the last delivery the store recorded. */
  readonly lastMessageId: string | undefined;
  readonly completedAt: string | undefined;
  readonly resultRef: string | undefined;
  readonly failureCode: string | undefined;
}

/** A canary's quarantine entry. */
export interface CanaryQuarantineEntry {
  /** `worker_quarantine.quarantine_id`, or the body hash of the DynamoDB item. */
  readonly id: string;
  readonly reasonCode: string;
}

/** What a cleanup removed and what it left, each a short sentence naming the key or entry. */
export interface CanaryCleanup {
  readonly removed: readonly string[];
  readonly left: readonly string[];
  /** Removals that failed (a refused call, an error): the smoke's cleanup check fails with them. */
  readonly errors: readonly string[];
}

/** The worker's store seen from the smoke command: reads of the canaries' state, and its removal. */
export interface CanaryStore {
  readonly kind: 'postgres' | 'dynamodb';
  /**
   * True when a duplicate leaves a trace (PostgreSQL counts it in `receive_count` and records its message id);
   * DynamoDB's gate answers a duplicate without writing, so the smoke judges it by the queue instead.
   */
  readonly recordsDuplicates: boolean;
  /** The inbox row or item of `key`, read consistently; undefined when there is none. */
  inbox(key: string): Promise<CanaryInboxState | undefined>;
  /** The quarantine entry of the canary sent as `body` with `key`; undefined when there is none. */
  quarantined(key: string, body: string): Promise<CanaryQuarantineEntry | undefined>;
  /** Removes the inbox state of `keys` and the quarantine entry of `poison`, as far as the ops rights allow. */
  remove(input: {
    readonly keys: readonly string[];
    readonly poison?: { readonly key: string; readonly body: string };
  }): Promise<CanaryCleanup>;
}
