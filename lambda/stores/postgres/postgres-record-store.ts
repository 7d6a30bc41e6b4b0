import type postgres from 'postgres';
import { discardConnections } from '../../postgres/discard-connections.ts';
import { type Failure, truncate } from '../../worker/classify-error.ts';
import type { EngineSettings } from '../../worker/commit-strategy.ts';
import { receiveCountOf } from '../../worker/outcome.ts';
import { readReferencedPayload } from '../../worker/read-referenced-payload.ts';
import type { ClaimRequest, FailedDelivery, FailureBook, RecordStore } from '../../worker/record-store.ts';
import { classifyPostgresError } from './classify-postgres-error.ts';
import { declaredResultRef, RESULT_REF_MAX_LENGTH } from './declared-result-ref.ts';
import { fenceTransaction } from './fence-transaction.ts';
import {
  countFailedAttempt,
  type InboxEntry,
  isInboxCompleted,
  markInboxTerminal,
  recordInboxFailure,
} from './inbox.ts';
import type { HandlerResult } from './message-handler.ts';
import type { CompleterClaim, PostgresCompleter } from './postgres-completer.ts';
import { quarantineMessage } from './quarantine.ts';

/**
 * The PostgreSQL store's claim token: the row the completer claimed, and the inbox entry it claimed it with.
 *
 * @internal
 */
export interface PostgresClaim {
  readonly claimed: CompleterClaim;
  readonly entry: InboxEntry;
}

/**
 * The PostgreSQL store's record primitives (`record-store.ts`) on `sql`, committed by `completer` (per message or per
 * batch, `postgres-completer.ts`). An attempt is ONE transaction: the claim inserts or row-locks the inbox row (a new
 * key inserted already COMPLETED), a gate decision is written in it, the handler runs with the fenced transaction, and
 * the row is completed in it. The bookkeeping after a rollback is its own short transaction: the attempt counted by
 * an upsert (the rollback removed a first delivery's claim), the failure written, the quarantine row inserted.
 *
 * @internal
 */
export function postgresRecordStore(
  sql: postgres.Sql,
  settings: Pick<EngineSettings, 'consumer' | 'payloads' | 'workerVersion'>,
  completer: PostgresCompleter,
): RecordStore<postgres.TransactionSql, PostgresClaim> {
  const { consumer } = settings;
  // The database role the worker signs in as is named by a permission denied.
  const classify = (error: unknown) => classifyPostgresError(error, { databaseUser: sql.options.user });
  const completedAlready = (idempotencyKey: string, requestHash: string) =>
    isInboxCompleted(sql, { consumer, idempotencyKey, requestHash });
  return {
    name: 'the database',
    abandoned: () => {
      discardConnections(sql);
    },
    classify,
    referencedPayload: (_record, decoded, calls) =>
      readReferencedPayload(decoded, calls, { completedAlready, classify, payloads: settings.payloads }),
    attempt: (calls, work) => calls.timed(() => completer.transaction(work)),
    async claim(tx, request) {
      // A copy in flight elsewhere makes the claim throw IN_PROGRESS_ELSEWHERE at once (see claimInbox).
      const entry = inboxEntry(settings, request);
      const claimed = await completer.claim(tx, entry);
      const { claim } = claimed;
      const count = { attempts: claim.receiveCount, durable: claimed.durable };
      // Cancelled first, whatever its request: no copy of a cancelled key is applied.
      if (claim.status === 'CANCELLED') return { kind: 'cancelled', ...count };
      if (claim.requestHash !== request.message.requestHash) {
        return { kind: 'hashMismatch', status: claim.status, ...count };
      }
      if (claim.status === 'COMPLETED') return { kind: 'duplicate', copy: claim.duplicateCopy, ...count };
      if (claim.status === 'FAILED_TERMINAL') {
        return { kind: 'terminal', failureCode: claim.failureCode ?? undefined, ...count };
      }
      return { kind: claim.inserted ? 'new' : 'retry', ...count, claim: { claimed, entry } };
    },
    async markMismatch(tx, request, failure) {
      // The row keeps the first message's hash; a COMPLETED row keeps its status.
      const idempotencyKey = request.decoded.envelope.idempotencyKey;
      await markInboxTerminal(tx, { consumer, idempotencyKey, ...failure });
    },
    async quarantine(tx, record, reason) {
      await quarantineMessage(tx, { consumer, record, reason, workerVersion: settings.workerVersion });
    },
    handlerScope(tx) {
      // A handle that stops working once the outcome is decided; past the budget its transaction is rolled back at
      // once (the rejection reaches postgres.js, which sends ROLLBACK or ROLLBACK TO SAVEPOINT on the connection it
      // still holds) and its running statements are cancelled.
      const fenced = fenceTransaction(tx);
      return { handle: { sql: fenced.sql }, close: (options) => fenced.close(options) };
    },
    async complete(tx, _request, { claimed, entry }, result) {
      const handled = result as HandlerResult | undefined;
      const resultRef = handled?.resultRef?.slice(0, RESULT_REF_MAX_LENGTH) ?? entry.resultRef ?? null;
      await completer.complete(tx, entry, claimed, resultRef);
      return { stale: handled?.stale === true };
    },
    settle: (calls, failed, work) =>
      calls.timed(() => completer.bookkeeping((tx) => work(failureBook(tx, settings, failed)))),
  };
}

/** The inbox entry of a claim: the declared result reference stored by a claim that inserts the row COMPLETED. */
function inboxEntry(
  settings: Pick<EngineSettings, 'consumer' | 'workerVersion'>,
  request: ClaimRequest,
): InboxEntry {
  return {
    consumer: settings.consumer,
    envelope: request.decoded.envelope,
    requestHash: request.decoded.requestHash,
    sqsMessageId: request.record.messageId,
    resultRef: declaredResultRef(request.message),
    traceId: request.traceId,
    workerVersion: settings.workerVersion,
    receiveCount: receiveCountOf(request.record),
  };
}

/**
 * The bookkeeping writes in `tx`, under the role's timeouts like the inbox transaction. A record without a usable
 * envelope has no row: only its quarantine row is written. A second copy of the message in flight right now holds
 * the key's inbox lock: `countFailedAttempt` then leaves the row to that copy's transaction.
 */
function failureBook(
  tx: postgres.TransactionSql,
  settings: Pick<EngineSettings, 'consumer' | 'workerVersion'>,
  failed: FailedDelivery<PostgresClaim>,
): FailureBook {
  const { consumer } = settings;
  const { decoded, record } = failed;
  const inbox: InboxEntry | undefined =
    decoded.envelope && decoded.requestHash
      ? {
          consumer,
          envelope: decoded.envelope,
          requestHash: decoded.requestHash,
          sqsMessageId: record.messageId,
          traceId: failed.traceId,
          workerVersion: settings.workerVersion,
          receiveCount: receiveCountOf(record),
        }
      : undefined;
  return {
    count: async (failure) => (inbox ? countFailedAttempt(tx, inbox, failedStatus(failure)) : undefined),
    async recordFailure(decided) {
      if (!inbox) return;
      await recordInboxFailure(tx, {
        consumer,
        idempotencyKey: inbox.envelope.idempotencyKey,
        status: failedStatus(decided),
        code: decided.code,
        message: truncate(decided.message),
        entry: inbox,
      });
    },
    async quarantine(reason) {
      await quarantineMessage(tx, { consumer, record, reason, workerVersion: settings.workerVersion });
    },
  };
}

/**
 * The inbox status a failure leaves: FAILED_RETRYABLE or FAILED_TERMINAL, and CANCELLED for a copy stopped at its
 * COMMIT because an operator cancelled its key meanwhile (`CANCELLED`, raised by migration 00013's triggers).
 */
function failedStatus(
  failure: Pick<Failure, 'retryable' | 'code'>,
): 'FAILED_RETRYABLE' | 'FAILED_TERMINAL' | 'CANCELLED' {
  if (failure.code === 'CANCELLED') return 'CANCELLED';
  return failure.retryable ? 'FAILED_RETRYABLE' : 'FAILED_TERMINAL';
}
