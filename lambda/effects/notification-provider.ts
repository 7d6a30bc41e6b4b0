/** A notification to send (the content that is hashed into the effect's request hash). */
export interface NotificationRequest {
  /** Address of the recipient. Personal data: never logged. */
  readonly recipient: string;
  readonly subject: string;
  readonly body: string;
}

/**
 * A notification service that honours idempotency keys: a second `send` with the same key returns the first
 * call's reference and does not notify again.
 */
export interface NotificationProvider {
  /** Provider name recorded in `external_effect_log.provider`. */
  readonly name: string;
  /**
   * Sends the notification once per `idempotencyKey`.
   * @throws TerminalError when the provider rejects the request for good (4xx).
   * @throws RetryableError when the outcome is unknown or the provider is unavailable.
   */
  send(request: NotificationRequest, idempotencyKey: string): Promise<{ reference: string }>;
}
