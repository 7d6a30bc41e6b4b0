import { RetryableError, TerminalError } from '../errors.ts';
import type { NotificationProvider, NotificationRequest } from './notification-provider.ts';

/** Options of {@link httpNotificationProvider}. */
export interface HttpNotificationProviderOptions {
  /** Endpoint that accepts `POST` of a JSON notification and answers `{ "reference": "…" }`. */
  readonly url: string;
  /** Provider name stored in the effect log. @default 'notifications-http' */
  readonly name?: string;
  /** Request timeout; a timed-out call is an unknown outcome (retried with the same key). @default 5000 */
  readonly timeoutMs?: number;
  /** The fetch implementation. @default globalThis.fetch */
  readonly fetch?: typeof globalThis.fetch;
}

/**
 * A {@link NotificationProvider} over HTTP: `POST url` with the notification as JSON and the effect key in
 * the `Idempotency-Key` header (the convention of Stripe and the IETF httpapi draft).
 *
 * Answers: 2xx `{ reference }` → done; 409 (same key still in progress) and 429/5xx → `RetryableError`;
 * any other 4xx → `TerminalError('EFFECT_REJECTED')`; no answer (network error, timeout) →
 * `RetryableError('EFFECT_OUTCOME_UNKNOWN')`. Error messages carry the status, never the request.
 *
 * @example
 * ```ts
 * const provider = httpNotificationProvider({ url: 'https://notify.example.com/v1/notifications' });
 * await provider.send({ recipient, subject, body }, 'escalation-notification:case-7:esc-1');
 * ```
 */
export function httpNotificationProvider(options: HttpNotificationProviderOptions): NotificationProvider {
  const name = options.name ?? 'notifications-http';
  const timeoutMs = options.timeoutMs ?? 5000;
  const fetchImpl = options.fetch ?? globalThis.fetch;
  return {
    name,
    async send(request: NotificationRequest, idempotencyKey: string) {
      let response: Response;
      try {
        response = await fetchImpl(options.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
          body: JSON.stringify(request),
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (error) {
        const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        throw new RetryableError('EFFECT_OUTCOME_UNKNOWN', `${name} did not answer (${reason})`, {
          cause: error,
        });
      }
      if (response.ok) {
        const body = (await response.json().catch(() => undefined)) as { reference?: unknown } | undefined;
        if (typeof body?.reference !== 'string') {
          throw new RetryableError(
            'EFFECT_BAD_REFERENCE',
            `${name} answered ${response.status} without a reference`,
          );
        }
        return { reference: body.reference };
      }
      await response.body?.cancel().catch(() => {});
      if (response.status === 409 || response.status === 429 || response.status >= 500) {
        throw new RetryableError(
          'EFFECT_PROVIDER_UNAVAILABLE',
          `${name} answered ${response.status}; retry later`,
        );
      }
      throw new TerminalError('EFFECT_REJECTED', `${name} rejected the notification with ${response.status}`);
    },
  };
}
