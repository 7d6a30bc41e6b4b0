/**
 * The external-effect modules in one place, for the project's own tools and tests.
 * Handler code imports the public part from `lambda/index.ts`.
 *
 * @internal
 */
export { EFFECT_KEY_MAX, effectKey } from './effect-key.ts';
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
