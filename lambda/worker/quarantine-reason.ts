/**
 * Why a message is quarantined: what every store keeps with a terminal message it stores for investigation.
 *
 * @internal
 */
export interface QuarantineReason {
  readonly code: string;
  /** Safe text: never a payload value. */
  readonly message: string;
  /** The idempotency key, when the body had a usable one. */
  readonly idempotencyKey?: string;
  readonly messageType?: string;
}
