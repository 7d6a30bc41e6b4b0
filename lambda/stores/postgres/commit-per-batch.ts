import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type postgres from 'postgres';
import { METRIC_NAMES } from '../../constants.ts';
import { BatchAttemptAbortedError, BatchRecordUnsettledError, DatabaseTimeoutError } from '../../errors.ts';
import { discardConnections } from '../../postgres/discard-connections.ts';
import { recordTrace } from '../../tracing/record-trace.ts';
import { msUntilDue } from '../../worker/attempt-policy.ts';
import type { CommitBatch, CommitStrategy, EngineSettings } from '../../worker/commit-strategy.ts';
import { CLIENT_DEADLINE_MARGIN_MS } from '../../worker/deadline-margins.ts';
import { type RecordOutcome, receiveCountOf, recordOutcome, verdicts } from '../../worker/outcome.ts';
import type { RecordStore } from '../../worker/record-store.ts';
import type { ResolvedPayload } from '../../worker/resolve-payload.ts';
import { retryVisibility } from '../../worker/retry-visibility.ts';
import { withinDeadline } from '../../worker/within-deadline.ts';
import { type BatchClaims, claimBatch } from './batch-claims.ts';
import { batchCompleter } from './batch-completer.ts';
import { classifyPostgresError } from './classify-postgres-error.ts';
import { declaredResultRef } from './declared-result-ref.ts';
import { guardedBegin } from './guarded-begin.ts';
import type { InboxEntry } from './inbox.ts';
import { inlineCompleter } from './inline-completer.ts';
import type { PostgresCompleter, TransactionRunner } from './postgres-completer.ts';
import { type PostgresClaim, postgresRecordStore } from './postgres-record-store.ts';
import { readBatchPayloads } from './read-batch-payloads.ts';

/**
 * Per-batch mode: Lambda time kept back from the records for the batch's own end (the deferred COMPLETED rows and
 * the COMMIT). The records see this much less time left, so the last one to start still leaves it.
 *
 * @internal
 */
export const BATCH_COMMIT_RESERVE_MS = 500;

/** One batch transaction's result. */
interface BatchAttempt {
  /** The attempt's outcomes; for an `aborted` attempt, to be discarded. */
  readonly outcomes: ReadonlyMap<string, RecordOutcome>;
  /** A record's transaction failed. */
  readonly rolledBack: boolean;
  /** It failed without savepoints: the whole attempt was rolled back and nothing of it counts. */
  readonly aborted: boolean;
  /** A batch claim made without a savepoint failed (a key in flight elsewhere). */
  readonly claimFailed: boolean;
}

/** What the per-batch functions share: the client, the engine's settings, the inline completer, the deadline's abandon. */
interface PerBatch {
  readonly sql: postgres.Sql;
  readonly settings: EngineSettings;
  readonly inline: PostgresCompleter;
  /** A call given up on at its deadline: the connections it may hold are discarded (`discardConnections`). */
  readonly abandon: (waitedMs: number) => Error;
}

/**
 * Commit mode `per-batch` on PostgreSQL: one transaction for the batch, one COMMIT, records one after another. If
 * the commit fails, nothing of the batch happened: every record that touched the database is reported retryable
 * (`BATCH_COMMIT_FAILED`). The batch's time budget keeps {@link BATCH_COMMIT_RESERVE_MS} back for the COMMIT.
 *
 * Referenced payloads are read before the batch transaction opens, so no connection waits on S3; the inbox rows
 * of the batch are claimed in one statement (`batch-claims.ts`; not for FIFO queues).
 *
 * A record's writes can only be undone alone inside a savepoint, and postgres.js waits for each SAVEPOINT before
 * the record's first statement: one round trip per record, ~20 % of per-batch throughput. So while this
 * environment's batches need no rollback, a batch runs without savepoints; when a record fails, that attempt is
 * rolled back whole (records after it are not started) and the batch runs again with a savepoint per record,
 * which reports the failure and commits the rest. The redo is what a redelivery would be: the inbox makes it
 * exactly-once. Batches keep their savepoints until one completes without a rollback. The batch claim goes the
 * same way: without a savepoint first; if it fails (a key in flight elsewhere), the redo claims record by record
 * instead of waiting for the same lock again. Only the redo's outcomes are returned.
 *
 * @internal
 */
export function createPerBatchCommit(sql: postgres.Sql, settings: EngineSettings): CommitStrategy {
  const ctx: PerBatch = {
    sql,
    settings,
    inline: inlineCompleter(sql),
    abandon: (waitedMs) => {
      discardConnections(sql);
      return new DatabaseTimeoutError(waitedMs);
    },
  };
  /** Whether this environment's next batch runs with a savepoint per record. */
  let savepointsNeeded = false;

  return {
    concurrent: false,
    settlesAtCommit: true,
    commitReserveMs: BATCH_COMMIT_RESERVE_MS,
    async commit(batch) {
      const resolved = await readBatchPayloads(sql, batch, { ...settings, abandon: ctx.abandon });
      let batchClaim = !batch.fifo;
      if (!savepointsNeeded) {
        const attempt = await batchAttempt(ctx, batch, resolved, false, batchClaim);
        if (!attempt.rolledBack) return attempt.outcomes;
        savepointsNeeded = true;
        if (!attempt.aborted) return attempt.outcomes; // the transaction itself failed: reported whole
        if (attempt.claimFailed) batchClaim = false;
        // The redo runs again the handlers whose effects the aborted attempt rolled back: anything they did
        // outside the transaction happens twice (external effects belong in the effect log).
        const reruns = [...attempt.outcomes.values()].filter(
          (outcome) => outcome.result === 'COMPLETED' || outcome.result === 'STALE_VERSION_SKIPPED',
        ).length;
        if (reruns > 0) settings.metrics.addMetric(METRIC_NAMES.handlerReruns, MetricUnit.Count, reruns);
      }
      const attempt = await batchAttempt(ctx, batch, resolved, true, batchClaim);
      savepointsNeeded = attempt.rolledBack;
      return attempt.outcomes;
    },
  };
}

/**
 * Claims the inbox rows of every record that will run the usual way (a valid, due envelope whose key is
 * unique in the batch) in one statement. Records left out — and every record when the claim cannot be
 * made (a key in flight elsewhere) — claim one by one. Without `savepoint` a failed claim throws.
 */
async function claimWholeBatch(
  ctx: PerBatch,
  tx: postgres.TransactionSql,
  batch: CommitBatch,
  resolved: ReadonlyMap<string, ResolvedPayload>,
  savepoint: boolean,
): Promise<BatchClaims | undefined> {
  const keyCount = new Map<string, number>();
  for (const { decoded: d } of batch.records) {
    const key = d.ok ? d.envelope.idempotencyKey : d.idempotencyKey;
    if (key) keyCount.set(key, (keyCount.get(key) ?? 0) + 1);
  }
  const entries: InboxEntry[] = batch.records.flatMap(({ record, decoded: d }) => {
    if (!d.ok || keyCount.get(d.envelope.idempotencyKey) !== 1) return [];
    if (msUntilDue(d.envelope.attemptPolicy, ctx.settings.now()) > 0) return []; // NOT_YET_DUE: it claims nothing
    const payload = resolved.get(record.messageId);
    if (payload?.ok === false) return []; // its payload failed: settled on its own
    return [
      {
        consumer: ctx.settings.consumer,
        envelope: d.envelope,
        requestHash: d.requestHash,
        sqsMessageId: record.messageId,
        resultRef: declaredResultRef(payload?.decoded ?? d),
        traceId: recordTrace(record)?.traceId,
        workerVersion: ctx.settings.workerVersion,
        receiveCount: receiveCountOf(record),
      },
    ];
  });
  if (entries.length < 2) return undefined;
  return claimBatch(tx, entries, { savepoint });
}

/**
 * The record store of one batch attempt: its completer, and the payloads read before the batch transaction opened
 * (no connection is held while S3 answers), by SQS messageId.
 */
function batchRecordStore(
  ctx: PerBatch,
  completer: PostgresCompleter,
  resolved: ReadonlyMap<string, ResolvedPayload>,
): RecordStore<postgres.TransactionSql, PostgresClaim> {
  const records = postgresRecordStore(ctx.sql, ctx.settings, completer);
  return {
    ...records,
    async referencedPayload(record, decoded, calls) {
      const read = resolved.get(record.messageId);
      if (!read) return records.referencedPayload(record, decoded, calls);
      return read.ok ? { ...read, completedAlready: false } : read;
    },
  };
}

/** One batch transaction, with a savepoint per record or without. */
async function batchAttempt(
  ctx: PerBatch,
  batch: CommitBatch,
  resolved: ReadonlyMap<string, ResolvedPayload>,
  withSavepoints: boolean,
  batchClaim: boolean,
): Promise<BatchAttempt> {
  const outcomes = new Map<string, RecordOutcome>();
  const started = ctx.settings.now();
  let rolledBack = false;
  let claimFailed = false;
  /** Records whose transaction has not settled: one given up on by its deadline may still be running. */
  let unsettled = 0;
  try {
    // The whole batch transaction, commit included, is bounded by the batch's time left.
    await withinDeadline(
      guardedBegin(ctx.sql, async (tx) => {
        const runner: TransactionRunner = async (fn) => {
          if (rolledBack && !withSavepoints) throw new BatchAttemptAbortedError();
          unsettled += 1;
          try {
            return await (withSavepoints ? (tx.savepoint(fn) as never) : fn(tx));
          } catch (error) {
            rolledBack = true;
            throw error;
          } finally {
            unsettled -= 1;
          }
        };
        const batchClaims = batchClaim
          ? await claimWholeBatch(ctx, tx, batch, resolved, withSavepoints).catch((error: unknown) => {
              // Only without a savepoint does a failed claim throw: this attempt is over.
              claimFailed = true;
              rolledBack = true;
              throw new BatchAttemptAbortedError({ cause: error });
            })
          : undefined;
        const records = batchRecordStore(ctx, batchCompleter(runner, batchClaims, ctx.inline), resolved);
        await batch.run(records, outcomes);
        if (rolledBack && !withSavepoints) throw new BatchAttemptAbortedError();
        // Never commit under a record that was given up on while its statements may still run: the batch
        // is rolled back and reported whole.
        if (unsettled > 0) throw new BatchRecordUnsettledError(unsettled);
        await batchClaims?.finish();
      }),
      batch.totalRemainingMs() - CLIENT_DEADLINE_MARGIN_MS,
      ctx.abandon,
    );
    return { outcomes, rolledBack, aborted: false, claimFailed };
  } catch (error) {
    if (error instanceof BatchAttemptAbortedError && !batch.state.databaseDown) {
      return { outcomes, rolledBack: true, aborted: true, claimFailed };
    }
    if (classifyPostgresError(error).connection) batch.state.databaseDown = true;
    const failed = batchCommitFailed(ctx, batch, outcomes, error, ctx.settings.now() - started);
    return { outcomes: failed, rolledBack: true, aborted: false, claimFailed };
  }
}

/**
 * The outcomes of a batch whose transaction failed: nothing of it happened, so every record that touched the
 * database is reported retryable (`BATCH_COMMIT_FAILED`), with the backoff of its receive count.
 */
function batchCommitFailed(
  ctx: PerBatch,
  batch: CommitBatch,
  outcomes: ReadonlyMap<string, RecordOutcome>,
  error: unknown,
  elapsedMs: number,
): Map<string, RecordOutcome> {
  const code = (error as { code?: string }).code ?? 'BATCH_COMMIT_FAILED';
  const failed = new Map<string, RecordOutcome>();
  for (const { record, receiveCount } of batch.records) {
    const previous = outcomes.get(record.messageId);
    // Records that never touched the database keep their outcome (and their visibility).
    if (previous && (previous.result === 'NOT_YET_DUE' || previous.result === 'DEADLINE_DEFERRED')) {
      failed.set(record.messageId, previous);
      continue;
    }
    failed.set(
      record.messageId,
      recordOutcome(
        {
          messageId: record.messageId,
          receiveCount,
          processingMs: elapsedMs,
          dbTransactionMs: elapsedMs,
          messageAgeMs: previous?.messageAgeMs ?? 0,
          messageType: previous?.messageType,
          idempotencyKey: previous?.idempotencyKey,
          aggregateId: previous?.aggregateId,
          correlationId: previous?.correlationId,
          traceId: previous?.traceId ?? recordTrace(record)?.traceId,
        },
        commitFailedVerdict(code, receiveCount, ctx.settings),
      ),
    );
  }
  return failed;
}

/** The verdict of a record whose batch did not commit: retryable, with the visibility of `BATCH_COMMIT_FAILED`. */
function commitFailedVerdict(cause: string, receiveCount: number, settings: EngineSettings) {
  const failure = {
    code: 'BATCH_COMMIT_FAILED',
    message: `the batch transaction did not commit (${cause}); every record is retried`,
  };
  const visibility = retryVisibility(failure, receiveCount, settings);
  return verdicts.retryable(failure, visibility.seconds, undefined, visibility.source);
}
