/**
 * Errors of the toolkit. Handlers throw {@link RetryableError} or {@link TerminalError}; everything else is
 * classified by `lambda/worker/classify-error.ts`.
 */

/** Base of every error this toolkit throws on purpose. */
export class WorkerError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'WorkerError';
  }
}

/**
 * Thrown by a domain handler when the message may succeed later (a dependency is down, a row is locked).
 * Like {@link TerminalError}'s, its message is logged and stored: no payload values in it.
 *
 * `retryAfterSeconds` asks for the message's next delivery to wait that long (a dependency's `Retry-After`: see
 * `parseRetryAfter`) instead of the backoff of its code: the engine sets it as the message's visibility, rounded up to
 * whole seconds and capped by the code's `maxSeconds` (`WORKER_RETRY_POLICY`, else `WORKER_BACKOFF_MAX_SECONDS`) and
 * SQS's maximum. A value that is not a finite number ≥ 0 is dropped (the backoff applies).
 *
 * @example
 * ```ts
 * if (response.status === 503) throw new RetryableError('LEDGER_UNAVAILABLE', 'the ledger service answered 503');
 * if (response.status === 429) {
 *   throw new RetryableError('LEDGER_RATE_LIMITED', 'the ledger service answered 429', {
 *     retryAfterSeconds: parseRetryAfter(response.headers.get('retry-after'), Date.now()),
 *   });
 * }
 * ```
 */
export class RetryableError extends WorkerError {
  /** Stable failure code, stored in `worker_inbox.failure_code` and matched by `terminalAfterCodes`. */
  readonly code: string;
  /** The delay the handler asked for before the next delivery, in seconds; undefined: the code's backoff. */
  readonly retryAfterSeconds: number | undefined;
  constructor(code: string, message: string, options?: { cause?: unknown; retryAfterSeconds?: number }) {
    super(message, options);
    this.name = 'RetryableError';
    this.code = code;
    const requested = options?.retryAfterSeconds;
    this.retryAfterSeconds =
      typeof requested === 'number' && Number.isFinite(requested) && requested >= 0 ? requested : undefined;
  }
}

/**
 * Thrown by a domain handler when the message can never succeed as it is (bad data, missing aggregate).
 * The message is logged and stored: it names the rule and the field, never a payload value (the record's log
 * line already carries the envelope's `aggregateId` and `idempotencyKey`).
 *
 * @example
 * ```ts
 * if (!row) throw new TerminalError('CASE_NOT_FOUND', 'the case of payload.caseId does not exist; send its CaseStageChanged first');
 * ```
 */
export class TerminalError extends WorkerError {
  /** Stable failure code, stored in `worker_inbox.failure_code` and `worker_quarantine.reason_code`. */
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TerminalError';
    this.code = code;
  }
}

/**
 * Thrown when the database does not answer before the Lambda deadline (a hung connection, a reconnect loop
 * against a server that is starting up): the record is reported instead of the invocation being killed.
 *
 * @internal
 */
export class DatabaseTimeoutError extends WorkerError {
  readonly code = 'DATABASE_TIMEOUT';
  constructor(waitedMs: number) {
    super(`the database did not answer within ${waitedMs} ms (the time left before the Lambda timeout)`);
    this.name = 'DatabaseTimeoutError';
  }
}

/**
 * Thrown when a domain handler outlives its time budget (the Lambda time left, less what settling the record
 * needs). Retryable and counted as an attempt, unlike a database outage: the rest of the batch still runs.
 * The record's transaction is rolled back at once and the handler's later statements fail with
 * {@link TransactionClosedError}.
 */
export class HandlerTimeoutError extends RetryableError {
  constructor(budgetMs: number) {
    super(
      'HANDLER_TIMEOUT',
      `the handler did not finish within its ${budgetMs} ms budget (the time left before the Lambda timeout); its transaction was rolled back. Make slow calls faster or raise the function timeout`,
    );
    this.name = 'HandlerTimeoutError';
  }
}

/**
 * Thrown by a statement a handler sends after its record's outcome was decided (it timed out, or it returned
 * and left a query behind): the transaction it belonged to is over, and the statement is never sent.
 */
export class TransactionClosedError extends WorkerError {
  readonly code = 'TRANSACTION_CLOSED';
  constructor() {
    super(
      "statement refused: this handler's transaction is over (the record timed out or already finished); await every query before the handler returns",
    );
    this.name = 'TransactionClosedError';
  }
}

/**
 * Thrown as the error of a query when no connection to PostgreSQL could be opened: the server did not answer
 * within the connect timeout, or a bounded series of attempts was closed or refused before the server was ready.
 * The message names the setting to fix and the server's host:port, never the password.
 */
export class DatabaseConnectError extends WorkerError {
  /** `CONNECT_TIMEOUT` (no answer) or `CONNECTION_CLOSED` (attempts closed or refused): postgres.js's codes. */
  readonly code: 'CONNECT_TIMEOUT' | 'CONNECTION_CLOSED';
  /** The setting the address came from: `DATABASE_URL`, `--database-url`, `DB_HOST/DB_PORT`. */
  readonly setting: string;
  /** `host:port` of the server (or the socket path). */
  readonly address: string;
  constructor(
    code: 'CONNECT_TIMEOUT' | 'CONNECTION_CLOSED',
    detail: string,
    target: { setting: string; address: string },
  ) {
    super(
      `Cannot connect to PostgreSQL at ${target.address} (${target.setting}): ${detail}. Check that ${target.setting} names a PostgreSQL server that is running and reachable from here.`,
    );
    this.name = 'DatabaseConnectError';
    this.code = code;
    this.setting = target.setting;
    this.address = target.address;
  }
}

/** Thrown at cold start when an environment variable or option is missing or invalid. */
export class ConfigError extends WorkerError {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * Thrown by the request hash's canonical JSON (`canonicalJson`) for a value nested deeper than its bound, before
 * JavaScript's recursive JSON code could overflow the stack. The worker refuses such a body before hashing it
 * (`PAYLOAD_TOO_DEEP`) and the outbox before storing it: reaching this error is a caller's own deep value.
 *
 * @internal
 */
export class JsonTooDeepError extends WorkerError {
  /** The deepest nesting of objects and arrays allowed. */
  readonly limit: number;
  constructor(limit: number) {
    super(
      `the value nests more than ${limit} levels of objects and arrays, the bound of the request hash (docs/semantics.md); flatten it`,
    );
    this.name = 'JsonTooDeepError';
    this.limit = limit;
  }
}

/**
 * Thrown when the migrations on disk or in the database are inconsistent: a `.sql` file that breaks the naming
 * rule, a gap or a duplicate in the numbering, a database ahead of the files. The message names the file and the fix.
 *
 * @internal
 */
export class MigrationError extends WorkerError {
  /** The migrations folder. */
  readonly directory: string | undefined;
  /** The file at fault (its name in {@link MigrationError.directory}), when one is. */
  readonly file: string | undefined;
  constructor(message: string, details: { directory?: string; file?: string } = {}) {
    super(message);
    this.name = 'MigrationError';
    this.directory = details.directory;
    this.file = details.file;
  }
}

/**
 * Thrown by the worker handler when every record of a batch failed, so that Lambda counts the invocation as
 * failed and scales the SQS poller down instead of hammering a sick database.
 *
 * @internal
 */
export class BatchFailedError extends WorkerError {
  /** SQS message ids of the failed records. */
  readonly messageIds: readonly string[];
  constructor(messageIds: readonly string[], reason: string) {
    super(
      `All ${messageIds.length} records of the batch failed (${reason}); failing the invocation so Lambda backs off.`,
    );
    this.name = 'BatchFailedError';
    this.messageIds = messageIds;
  }
}

/**
 * Per-batch commit mode, internal: a record of a batch attempt without savepoints failed, so the attempt is
 * rolled back whole and the batch runs again with a savepoint per record. Never leaves the engine.
 *
 * @internal
 */
export class BatchAttemptAbortedError extends WorkerError {
  constructor(options?: { cause?: unknown }) {
    super(
      'a statement of this batch attempt failed without a savepoint: the attempt is rolled back and run again',
      options,
    );
    this.name = 'BatchAttemptAbortedError';
  }
}

/**
 * Per-batch commit mode, internal: a record's transaction had not settled when the batch reached its end (its
 * deadline gave up on it while a statement may still run), so the batch is rolled back instead of committed.
 */
export class BatchRecordUnsettledError extends WorkerError {
  readonly code = 'RECORD_UNSETTLED';
  constructor(unsettled: number) {
    super(`${unsettled} record(s) of the batch had not settled at its end: the batch is rolled back`);
    this.name = 'BatchRecordUnsettledError';
  }
}
