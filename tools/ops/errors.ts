/**
 * Errors of the operations CLI. Each carries the process exit code a script can branch on:
 * 0 ok, 1 the operation failed, 2 usage or configuration error.
 */
import type { NewerCompletedEvents } from './newer-completed-events.ts';

/** Base of every error an ops command throws on purpose; `exitCode` is what `sqs-worker` exits with. */
export class OpsError extends Error {
  /** Process exit code for this failure. */
  readonly exitCode: number;
  /** Facts about the failure for scripts (metadata only, never a payload); `--json` prints them as `error.data`. */
  readonly data: Readonly<Record<string, unknown>> | undefined;
  constructor(
    message: string,
    exitCode: number,
    options?: { cause?: unknown; data?: Readonly<Record<string, unknown>> },
  ) {
    super(message, options);
    this.name = 'OpsError';
    this.exitCode = exitCode;
    this.data = options?.data;
  }
}

/** Thrown when a flag, argument or setting is missing or invalid, or a command refuses unsafe input (exit 2). */
export class UsageError extends OpsError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, 2, options);
    this.name = 'UsageError';
  }
}

/** Thrown when an operation was attempted and did not complete (exit 1). */
export class OperationError extends OpsError {
  constructor(message: string, options?: { cause?: unknown; data?: Readonly<Record<string, unknown>> }) {
    super(message, 1, options);
    this.name = 'OperationError';
  }
}

/**
 * Thrown when `quarantine release` refuses to re-send a message because newer events of its aggregate have
 * completed since it was first seen, and `--force` was not given (exit 1). Nothing was sent or changed.
 */
export class OutOfOrderReleaseError extends OperationError {
  /** The quarantine entry that was not released. */
  readonly quarantineId: string;
  /** The aggregate, the first-seen time, and the newer completed events (count and the first of them). */
  readonly newer: NewerCompletedEvents;
  constructor(message: string, quarantineId: string, newer: NewerCompletedEvents) {
    super(message, {
      data: {
        quarantineId,
        aggregate: newer.aggregate,
        firstSeenAt: newer.since,
        newerCompletedEvents: newer.count,
        newerEvents: newer.events,
      },
    });
    this.name = 'OutOfOrderReleaseError';
    this.quarantineId = quarantineId;
    this.newer = newer;
  }
}

/**
 * Thrown by a command that printed its result and found failures in it (`smoke`: a check FAILed), exit 1. The
 * result already says what failed: `--json` prints no error document after it.
 */
export class FailedChecksError extends OperationError {
  constructor(message: string, data?: Readonly<Record<string, unknown>>) {
    super(message, data ? { data } : undefined);
    this.name = 'FailedChecksError';
  }
}

/** Exit codes of `sqs-worker`, for scripts. */
export const EXIT_CODES = { ok: 0, failed: 1, usage: 2 } as const;
