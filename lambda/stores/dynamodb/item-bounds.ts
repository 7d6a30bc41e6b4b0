/**
 * Bounds of what the DynamoDB store writes from a message or a failure onto its items, so an item always fits
 * DynamoDB's 400 KB (`item-size.ts`) whatever the message carries (a leaf module: constants only). Texts are cut
 * with `cutUtf8`, ending in `…`; docs/semantics.md states what a user sees.
 */

/** Largest body kept on a quarantine item, in UTF-8 bytes; a longer one (SQS allows 1 MiB) is cut, `bodyTruncated`. */
export const MAX_QUARANTINE_BODY_BYTES = 300 * 1024;

/** Largest failure code kept (`failureCode`, `reasonCode`): 100 characters, as `worker_inbox.failure_code`, of 4 bytes. */
export const MAX_FAILURE_CODE_BYTES = 400;

/** Largest failure message kept (`failureMessage`, `reasonMessage`); the engine's are at most 500 characters. */
export const MAX_FAILURE_MESSAGE_BYTES = 4 * 1024;

/** Largest SQS message id kept (SQS's are 100 characters at most). */
export const MAX_MESSAGE_ID_BYTES = 400;

/** Largest event source ARN kept (an ARN has at most 2048 characters; a queue's is far shorter). */
export const MAX_ARN_BYTES = 2048;

/** At most this many names of dropped attributes are listed on an item (SQS allows 10 message attributes). */
export const MAX_LISTED_DROPPED = 10;

/** A listed name of a dropped attribute is cut at this length (SQS allows 256 characters). */
export const MAX_LISTED_NAME_BYTES = 256;

/**
 * Room a quarantine item keeps for what the worker's write does not set: `occurrences`, `firstQuarantinedAt` of the
 * first write, what `quarantine release` adds (`releasedBy`, `releasedMessageId`, `releaseClaim`: an actor of at
 * most 200 characters, under 2 KB together) and an `idempotencyKey` or `messageType` an earlier write kept.
 */
export const QUARANTINE_RESERVED_BYTES = 8 * 1024;
