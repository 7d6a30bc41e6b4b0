import type postgres from 'postgres';
import { HandlerTimeoutError, RetryableError } from '../../errors.ts';
import { discardConnections } from '../../postgres/discard-connections.ts';
import type { RecordTracer } from '../../tracing/record-tracer.ts';
import type { TerminalPolicy } from '../../types.ts';
import { type AttemptDefaults, applyAttemptPolicy } from '../../worker/attempt-policy.ts';
import type { BackoffSettings } from '../../worker/backoff.ts';
import { type Failure, truncate } from '../../worker/classify-error.ts';
import type { BatchRecord, BatchState, EngineSettings } from '../../worker/commit-strategy.ts';
import { HANDLER_MARGIN_MS } from '../../worker/deadline-margins.ts';
import type { DecodedRecord, UndecodableRecord } from '../../worker/decode-record.ts';
import type { HandlerRegistry } from '../../worker/handler-registry.ts';
import { type RecordOutcome, type Verdict, verdicts } from '../../worker/outcome.ts';
import { prepareRecord } from '../../worker/prepare-record.ts';
import { decodedIds, startRecordRun } from '../../worker/record-run.ts';
import { redactValues } from '../../worker/redact-values.ts';
import type { PayloadReader, ResolvedPayload } from '../../worker/resolve-payload.ts';
import { withinDeadline } from '../../worker/within-deadline.ts';
import type { BatchClaims } from './batch-claims.ts';
import { classifyPostgresError } from './classify-postgres-error.ts';
import { declaredResultRef, RESULT_REF_MAX_LENGTH } from './declared-result-ref.ts';
import { fenceTransaction } from './fence-transaction.ts';
import { guardedBegin } from './guarded-begin.ts';
import {
  claimInbox,
  completeInbox,
  countFailedAttempt,
  type InboxEntry,
  markInboxTerminal,
  recordInboxFailure,
} from './inbox.ts';
import type { MessageHandler } from './message-handler.ts';
import { quarantineMessage } from './quarantine.ts';

/**
 * Runs `fn` in a transaction: `sql.begin` per message; per batch, a savepoint of the batch transaction, or the
 * batch transaction itself while no record has needed a rollback (see `commit-per-batch.ts`).
 *
 * @internal
 */
export type TransactionRunner = <T>(fn: (tx: postgres.TransactionSql) => Promise<T>) => Promise<T>;

/**
 * Collaborators and settings of {@link processRecord} (the PostgreSQL record path of both commit strategies); made
 * by {@link createRecordDependencies}.
 *
 * @internal
 */
export interface RecordDependencies {
  readonly consumer: string;
  readonly registry: HandlerRegistry;
  /** Runs the inbox transaction of a record. */
  readonly transaction: TransactionRunner;
  /** Runs the short bookkeeping transaction after a rollback (DESIGN.md rule 3). */
  readonly bookkeeping: TransactionRunner;
  readonly terminalPolicy: TerminalPolicy;
  readonly attemptDefaults: AttemptDefaults;
  readonly backoff: BackoffSettings;
  readonly now: () => number;
  readonly random: () => number;
  /** Per-batch mode: the claims made for the whole batch in one statement (see `batch-claims.ts`). */
  readonly batchClaims?: BatchClaims;
  /** Reads `payloadRef` payloads (see `resolve-payload.ts`). */
  readonly payloads: PayloadReader;
  /**
   * True when the key is already COMPLETED with this request hash: a duplicate of a referenced message is then
   * acknowledged without reading S3 again (the object may even be gone). One autocommit statement on the pool.
   */
  readonly completedAlready: (idempotencyKey: string, requestHash: string) => Promise<boolean>;
  /**
   * Per-batch mode: the referenced payloads, read before the batch transaction opened (no connection is held
   * while S3 answers), by SQS messageId.
   */
  readonly resolved?: ReadonlyMap<string, ResolvedPayload>;
  /** When tracing is on: gives the tracer that opens a subsegment per record (see `record-tracer.ts`). */
  readonly tracer?: () => Promise<RecordTracer | undefined>;
  /** A database call was given up on at its deadline: discards the client's connections (`discardConnections`). */
  readonly abandoned: () => void;
  /** The database role the worker signs in as (named by a permission denied, see `classifyPostgresError`). */
  readonly databaseUser?: string;
}

/**
 * The record dependencies of a worker on `sql`: every record in its own `sql.begin` transaction ({@link guardedBegin}:
 * a connection lost under it never reaches postgres.js's socket), which a commit strategy may replace
 * (`transaction`, `bookkeeping`).
 *
 * @internal
 */
export function createRecordDependencies(sql: postgres.Sql, settings: EngineSettings): RecordDependencies {
  const perMessage: TransactionRunner = (fn) => guardedBegin(sql, fn);
  return {
    consumer: settings.consumer,
    registry: settings.registry,
    transaction: perMessage,
    bookkeeping: perMessage,
    terminalPolicy: settings.terminalPolicy,
    attemptDefaults: settings.attemptDefaults,
    backoff: settings.backoff,
    now: settings.now,
    random: settings.random,
    payloads: settings.payloads,
    databaseUser: sql.options.user,
    ...(settings.tracer ? { tracer: settings.tracer } : {}),
    abandoned: () => {
      discardConnections(sql);
    },
    completedAlready: async (idempotencyKey, requestHash) => {
      const [row] = await sql<{ completed: boolean }[]>`
        select request_hash = ${requestHash} and status = 'COMPLETED' as completed
        from worker_inbox where consumer = ${settings.consumer} and idempotency_key = ${idempotencyKey}
      `;
      return row?.completed === true;
    },
  };
}

type Decision = Verdict;

/**
 * Processes one SQS record end to end and decides its outcome (DESIGN.md "Path of one message"):
 * decode → route → ONE transaction (claim + lock the inbox row, duplicate / hash-mismatch / terminal checks,
 * domain mutation, COMPLETED) → on failure: classify, count the attempt in a short transaction, apply the
 * attempt policy, quarantine terminal messages. Never throws: every path ends in an outcome, and a message
 * is acknowledged only when its effect (or its quarantine row) is committed.
 *
 * @internal
 */
export async function processRecord(
  item: BatchRecord,
  deps: RecordDependencies,
  batch: BatchState,
): Promise<RecordOutcome> {
  const { record, receiveCount } = item;
  /** True when the record's inbox row was claimed with its batch (per-batch mode), not by the record. */
  let claimedInBatch = false;
  // The producer's trace: on the record's log line (its outcome) and its subsegment.
  const run = await startRecordRun(record, receiveCount, deps, batch);
  const { trace, finish, retry, timed } = run;

  if (batch.databaseDown) {
    return finish(
      retry({
        code: 'DATABASE_UNAVAILABLE',
        message: 'not attempted: the database failed earlier in this batch',
      }),
    );
  }

  run.ids = decodedIds(item.decoded, trace?.traceId);
  const { ids } = run;
  // A duplicate of a referenced message goes on unread: its transaction finds COMPLETED and acknowledges it.
  const prepared = await prepareRecord(item, run, deps, {
    resolved: deps.resolved?.get(record.messageId),
    completedAlready: deps.completedAlready,
    classify: classifyPostgresError,
    settle: (failure) => settleFailure(failure, item.decoded),
  });
  if (prepared.kind === 'settled') return finish(prepared.verdict);
  const { decoded, message, context } = prepared;

  const entry: InboxEntry = {
    consumer: deps.consumer,
    envelope: decoded.envelope,
    requestHash: decoded.requestHash,
    sqsMessageId: record.messageId,
    resultRef: declaredResultRef(message),
    traceId: trace?.traceId,
  };
  let attempts: number | undefined;
  try {
    const outcome = await timed(() =>
      deps.transaction((tx) =>
        applyInTransaction(tx, message, entry, (claimed) => {
          attempts = claimed;
        }),
      ),
    );
    return finish(outcome);
  } catch (error) {
    // A handler's message is its author's text: values of the payload it quotes are taken out before the
    // message is logged or stored (a safety net; docs/writing-handlers.md asks for messages without values).
    // The payload as the handler saw it: for a `payloadRef`, the one read from S3 (`decoded` has none yet).
    const failure = classifyPostgresError(error, { databaseUser: deps.databaseUser });
    const redacted = redactValues(failure.message, [decoded.envelope.payload, message.payload]);
    return finish(await settleFailure({ ...failure, message: redacted }, decoded, attempts));
  }

  /** The inbox transaction: claim, checks, effect, COMPLETED. Throws to roll back. */
  async function applyInTransaction(
    tx: postgres.TransactionSql,
    message: DecodedRecord,
    inbox: InboxEntry,
    onClaim: (receiveCount: number) => void,
  ): Promise<Decision> {
    // Per-batch mode may have claimed this record with the rest of its batch already. A copy in flight elsewhere
    // makes the claim throw IN_PROGRESS_ELSEWHERE at once (see claimInbox): nothing waits for it.
    const preclaimed = deps.batchClaims?.take(record.messageId);
    if (preclaimed) claimedInBatch = true;
    const claim = preclaimed ?? (await claimInbox(tx, inbox));
    onClaim(claim.receiveCount);
    const key = message.envelope.idempotencyKey;

    if (claim.requestHash !== message.requestHash) {
      const failure = {
        code: 'IDEMPOTENCY_HASH_MISMATCH',
        message: `idempotency key already used by a different request (inbox status ${claim.status}); the new message was not applied`,
      };
      await markInboxTerminal(tx, { consumer: deps.consumer, idempotencyKey: key, ...failure });
      return terminal(tx, failure, claim.receiveCount, true);
    }
    if (claim.status === 'COMPLETED') {
      return verdicts.duplicate(claim.receiveCount);
    }
    if (message.pendingRef) {
      // Skipped as a duplicate, but the row is no longer COMPLETED (purged since): read it on the next delivery.
      throw new RetryableError(
        'PAYLOAD_NOT_READ',
        'the payload was not read because the key looked completed; it is read on the next delivery',
      );
    }
    if (claim.status === 'FAILED_TERMINAL') {
      const failure = {
        code: claim.failureCode ?? 'PREVIOUSLY_TERMINAL',
        message:
          'this idempotency key already failed terminally; fix the cause, then release it from quarantine',
      };
      return terminal(tx, failure, claim.receiveCount);
    }
    // The handler gets a handle that stops working once its outcome is decided, and a budget that leaves time to
    // roll back and count the attempt. Past the budget its transaction is rolled back at once (the rejection
    // below reaches postgres.js, which sends ROLLBACK or ROLLBACK TO SAVEPOINT on the connection it still holds)
    // and its running statements are cancelled; a handler that wakes up later can no longer reach the database.
    const fenced = fenceTransaction(tx);
    const budgetMs = batch.remainingMs() - HANDLER_MARGIN_MS;
    // A PostgreSQL worker routes to PostgreSQL handlers only: the worker's options were refused otherwise.
    const handler = message.handler as MessageHandler;
    let result: Awaited<ReturnType<typeof handler.handle>>;
    try {
      result = await withinDeadline(handler.handle({ sql: fenced.sql, ...context }), budgetMs, (waited) => {
        fenced.close({ cancelRunning: true });
        return new HandlerTimeoutError(waited);
      });
    } finally {
      fenced.close();
    }
    // A new key's claim stored it COMPLETED with the declared result reference: nothing to write unless the handler
    // returned another one. An existing row (a redelivery after a failed attempt) is completed here.
    const resultRef = result?.resultRef?.slice(0, RESULT_REF_MAX_LENGTH) ?? inbox.resultRef ?? null;
    if (preclaimed) deps.batchClaims?.complete(key, resultRef);
    else if (!claim.completed || resultRef !== claim.resultRef) {
      await completeInbox(tx, { consumer: deps.consumer, idempotencyKey: key, resultRef });
    }
    return verdicts.completed(claim.receiveCount, result?.stale === true);
  }

  /** A terminal outcome decided inside a transaction that commits (quarantine row included). */
  async function terminal(
    sql: postgres.TransactionSql,
    failure: { code: string; message: string },
    attemptCount: number | undefined,
    hashMismatch = false,
  ): Promise<Decision> {
    const quarantined = deps.terminalPolicy === 'quarantine';
    if (quarantined) {
      await quarantineMessage(sql, {
        consumer: deps.consumer,
        record,
        reason: { ...failure, idempotencyKey: ids.idempotencyKey, messageType: ids.messageType },
      });
    }
    return verdicts.terminal(failure, { quarantined, attempts: attemptCount, hashMismatch });
  }

  /**
   * After a rollback (or before any transaction, for undecodable records): count the attempt, apply the
   * attempt policy, write status and failure, quarantine a terminal message, all in one short transaction.
   * Skipped when the database is unreachable (the record is reported; nothing is lost) and when another
   * delivery holds the row (its transaction will write the row).
   */
  async function settleFailure(
    failure: Failure,
    message: DecodedRecord | UndecodableRecord,
    claimedAttempts?: number,
  ): Promise<Decision> {
    if (failure.connection) {
      batch.databaseDown = true;
      return retry(failure, claimedAttempts);
    }
    if (failure.code === 'IN_PROGRESS_ELSEWHERE') return retry(failure, claimedAttempts);

    try {
      return await timed(() =>
        deps.bookkeeping(async (tx) => {
          // Under the role's timeouts, like the inbox transaction. A second copy of the message in flight right now
          // holds the key's inbox lock: countFailedAttempt then leaves the row to that copy's transaction.
          const inbox: InboxEntry | undefined =
            message.envelope && message.requestHash
              ? {
                  consumer: deps.consumer,
                  envelope: message.envelope,
                  requestHash: message.requestHash,
                  sqsMessageId: record.messageId,
                  traceId: trace?.traceId,
                }
              : undefined;
          // A claim made with the batch survived the record's rollback: its attempt is already counted.
          const counted = claimedInBatch
            ? claimedAttempts
            : inbox
              ? await countFailedAttempt(
                  tx,
                  inbox,
                  failure.retryable ? 'FAILED_RETRYABLE' : 'FAILED_TERMINAL',
                )
              : undefined;
          const decided = applyAttemptPolicy(failure, {
            policy: message.envelope?.attemptPolicy,
            attempts: counted ?? claimedAttempts ?? receiveCount,
            now: new Date(deps.now()),
            defaults: deps.attemptDefaults,
          });
          if (inbox && counted !== undefined) {
            await recordInboxFailure(tx, {
              consumer: deps.consumer,
              idempotencyKey: inbox.envelope.idempotencyKey,
              status: decided.retryable ? 'FAILED_RETRYABLE' : 'FAILED_TERMINAL',
              code: decided.code,
              message: truncate(decided.message),
            });
          }
          const decision = decided.retryable ? retry(decided, counted) : await terminal(tx, decided, counted);
          return decision;
        }),
      );
    } catch (error) {
      // The bookkeeping itself failed (or waited past the role's lock timeout for a row): report the record
      // so SQS keeps it. A terminal message is never acknowledged without its quarantine row.
      const quarantining = !failure.retryable && deps.terminalPolicy === 'quarantine';
      return run.unsettled(
        failure,
        classifyPostgresError(error, { databaseUser: deps.databaseUser }),
        undefined,
        quarantining ? 'quarantine' : 'bookkeeping',
      );
    }
  }
}
