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
