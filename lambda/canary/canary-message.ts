/**
 * The canary message of `sqs-worker smoke` (a leaf module: constants and the payload schema, no logic). Its handler
 * is registered in every worker by the toolkit (`canary-handler.ts`, `with-canary-handler.ts`).
 */
import * as z from 'zod/mini';

/** The envelope `messageType` of a canary. Keep it clear of your own message types. */
export const CANARY_MESSAGE_TYPE = 'SqsInboxWorkerCanary';

/** The envelope `schemaVersion` of a canary. */
export const CANARY_SCHEMA_VERSION = 1;

/** Prefix of every canary's idempotency key: `canary:<runId>:<mode>`. */
export const CANARY_KEY_PREFIX = 'canary:';

/**
 * What a canary asks its handler to do: `apply` completes it (writing nothing but the inbox), `poison` fails it
 * terminally (`CANARY_POISON`: quarantined and acknowledged), `retry` fails it retryably every time
 * (`CANARY_RETRYABLE`: SQS moves it to the DLQ after maxReceiveCount receives).
 */
export const CANARY_MODES = ['apply', 'poison', 'retry'] as const;

/** One of {@link CANARY_MODES}. */
export type CanaryMode = (typeof CANARY_MODES)[number];

/** The canary's payload: the smoke run it belongs to and what its handler does with it. */
export const canaryPayloadSchema = z.object({
  runId: z.string().check(z.minLength(1), z.maxLength(100)),
  mode: z.enum(CANARY_MODES),
});

/**
 * The idempotency key of a canary of a smoke run.
 *
 * @internal
 */
export function canaryKey(runId: string, mode: CanaryMode): string {
  return `${CANARY_KEY_PREFIX}${runId}:${mode}`;
}
