/**
 * `sqs-inbox-worker/effects`: a call to the outside world (an e-mail, a payment provider) made at most once per
 * effect key, through the effect log (`external_effect_log`, PostgreSQL): `performExternalEffect` around the call,
 * `effectKey` to derive the key from the message, and an HTTP notification provider as an example of the provider
 * contract (docs/external-effects.md).
 *
 * Only re-exports.
 *
 * @example
 * ```ts
 * import { effectKey, performExternalEffect } from 'sqs-inbox-worker/effects';
 * ```
 *
 * @packageDocumentation
 */

export { effectKey } from './effect-key.ts';
export {
  type HttpNotificationProviderOptions,
  httpNotificationProvider,
} from './http-notification-provider.ts';
export type { NotificationProvider, NotificationRequest } from './notification-provider.ts';
export {
  type ExternalEffectResult,
  type PerformExternalEffectOptions,
  performExternalEffect,
} from './perform-external-effect.ts';
