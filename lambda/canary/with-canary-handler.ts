import type { RoutedHandler } from '../worker/routed-handler.ts';
import { CANARY_MESSAGE_TYPE } from './canary-message.ts';

/**
 * The handlers a worker registers: yours, plus the toolkit's canary handler (`SqsInboxWorkerCanary`, the one the
 * worker's store brings: `canaryHandler`, `canaryDynamoHandler`) unless you define that message type yourself, in
 * which case yours is used for every version.
 *
 * Added here, by the engine, rather than by each entry file: every worker — the shipped entries, your `workerEntry`,
 * `npm start -- --handlers`, the poller — answers `sqs-worker smoke` the same way, and a list of your own cannot
 * forget it. The canary writes nothing but its inbox row or item.
 *
 * @internal
 */
export function withCanaryHandler(
  handlers: readonly RoutedHandler[],
  canary: RoutedHandler,
): readonly RoutedHandler[] {
  if (handlers.length === 0 || handlers.some((handler) => handler.messageType === CANARY_MESSAGE_TYPE)) {
    return handlers;
  }
  return [...handlers, canary];
}
