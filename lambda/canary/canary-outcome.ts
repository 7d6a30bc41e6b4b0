import { RetryableError, TerminalError } from '../errors.ts';
import type { CanaryMode } from './canary-message.ts';

/**
 * The result reference of an applied canary (`worker_inbox.result_ref`, the inbox item's `resultRef`), the same
 * for every store.
 *
 * @internal
 */
export const canaryResultRef = (payload: { runId: string }): string => `canary:${payload.runId}`;

/**
 * What a canary's mode asks for, the same for every store: nothing for `apply` (its effect is the inbox row or item
 * COMPLETED with its result reference), a terminal failure for `poison`, a retryable one for `retry`, every time.
 *
 * @internal
 */
export function canaryFailure(mode: CanaryMode): Error | undefined {
  if (mode === 'poison') {
    return new TerminalError('CANARY_POISON', 'a poison canary of sqs-worker smoke: terminal on purpose');
  }
  if (mode === 'retry') {
    return new RetryableError(
      'CANARY_RETRYABLE',
      'a never-recovering canary of sqs-worker smoke: retryable on purpose until SQS moves it to the DLQ',
    );
  }
  return undefined;
}
