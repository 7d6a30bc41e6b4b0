import {
  BatchProcessor,
  EventType,
  processPartialResponse,
  SqsFifoPartialProcessorAsync,
} from '@aws-lambda-powertools/batch';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import pLimit from 'p-limit';
import type postgres from 'postgres';
import { DEFAULT_METRICS_NAMESPACE, METRIC_NAMES, WORKER_DEFAULTS } from '../constants.ts';
import {
  BatchAttemptAbortedError,
  BatchFailedError,
  BatchRecordUnsettledError,
  ConfigError,
} from '../errors.ts';
import type { CommitMode, TerminalPolicy } from '../types.ts';
import { msUntilDue } from './attempt-policy.ts';
import { type BackoffSettings, backoffSeconds } from './backoff.ts';
import { type BatchClaims, claimBatch } from './batch-claims.ts';
import { DeadlineGuard } from './deadline-guard.ts';
import { declaredResultRef } from './declared-result-ref.ts';
import { type DecodedRecord, decodeRecord, type UndecodableRecord } from './decode-record.ts';
import { createHandlerRegistry } from './handler-registry.ts';
import type { InboxEntry } from './inbox.ts';
import type { MessageHandler } from './message-handler.ts';
import type { RecordOutcome } from './outcome.ts';
import {
  type BatchState,
  processRecord,
  type RecordDependencies,
  type TransactionRunner,
} from './process-record.ts';
import { recordTelemetry } from './record-telemetry.ts';
import { DEFAULT_MAX_PAYLOAD_BYTES, type ResolvedPayload, resolvePayload } from './resolve-payload.ts';
import { type S3ClientSource, s3ClientResolver } from './s3-client-source.ts';
import { type SqsClientSource, sqsClientResolver } from './sqs-client-source.ts';
import {
  BATCH_COMMIT_RESERVE_MS,
  CLIENT_DEADLINE_MARGIN_MS,
  HANDLER_MARGIN_MS,
} from './transaction-timeouts.ts';
import { withinDeadline } from './within-deadline.ts';

/** Options of {@link createWorker}. Only `consumer`, `handlers` and `sql` are required. */
export interface WorkerOptions {
  /** Inbox namespace of this worker (`worker_inbox.consumer`), 1–100 characters. */
  readonly consumer: string;
  /** Domain handlers, one per messageType and schemaVersion. */
  // biome-ignore lint/suspicious/noExplicitAny: handlers of any payload schema
  readonly handlers: readonly MessageHandler<any>[];
  /** The postgres.js client (module scope, `prepare: false`). */
  readonly sql: postgres.Sql;
  /**
   * SQS client for the backoff visibility changes, or a function that makes it on first use (the deployable
   * handler imports the SDK's SQS code only when a record first needs a backoff: see {@link SqsClientSource}).
   * Without it, failures wait for the queue's visibility timeout.
   */
  readonly sqs?: SqsClientSource;
  /**
   * S3 client that reads `payloadRef` payloads (GetObject), or a function that makes it on first use (the
   * deployable handler imports the SDK's S3 code only when a record first carries a reference: see
   * {@link S3ClientSource}). Without it, a record with a `payloadRef` fails retryable `PAYLOAD_READER_MISSING`.
   */
  readonly s3?: S3ClientSource;
  /**
   * Largest `payloadRef` object read, in bytes; a larger one is terminal `PAYLOAD_TOO_LARGE`. The object is held
   * whole while its handler runs (in per-batch mode, every referenced payload of the batch at once): keep it well
   * below the function's memory. @default 67108864 (64 MiB)
   */
  readonly maxPayloadBytes?: number;
  /** Powertools Logger. @default a Logger of service POWERTOOLS_SERVICE_NAME */
  readonly logger?: Logger;
  /** Powertools Metrics. @default a Metrics of namespace POWERTOOLS_METRICS_NAMESPACE (or `SqsInboxWorker`) */
  readonly metrics?: Metrics;
  /** `quarantine`: store terminal messages and acknowledge them; `dlq`: report them until SQS moves them. @default 'quarantine' */
  readonly terminalPolicy?: TerminalPolicy;
  /** Records processed at once, 1 to the pool size (`sql.options.max`). @default 1 */
  readonly recordConcurrency?: number;
  /** `per-message`: one transaction per record; `per-batch`: one per batch, a savepoint per record. @default 'per-message' */
  readonly commitMode?: CommitMode;
  /** Backoff of retryable failures. @default { baseSeconds: 2, maxSeconds: 900 } */
  readonly backoff?: Partial<BackoffSettings>;
  /** Attempts after which a retryable failure is terminal, when the envelope gives none. @default 10 */
  readonly maxBusinessAttempts?: number;
  /** Do not start a record with less than this left; default: max(2 s, observed p99 of records). */
  readonly deadlineGuardMs?: number;
  /** Throw when every record of a batch failed, so Lambda backs off. @default true */
  readonly failInvocationOnFullBatchFailure?: boolean;
  /** Clock in epoch milliseconds (tests). @default Date.now */
  readonly now?: () => number;
  /** Random source in [0, 1) for backoff jitter (tests). @default Math.random */
  readonly random?: () => number;
}

/** The Lambda handler returned by {@link createWorker}. */
export type WorkerHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

/**
 * Builds the Lambda SQS handler of a worker: exactly-once effects under at-least-once delivery.
 *
 * Per record (in `processRecord`): decode and route, then ONE transaction that claims the inbox row,
 * skips duplicates, rejects a reused key with another payload, applies the domain handler and marks the
 * row COMPLETED. Per batch: Powertools `BatchProcessor` (or `SqsFifoPartialProcessorAsync` for `.fifo`
 * queues, stopping a group at its first failure) builds `batchItemFailures`; reported records get an
 * exponential backoff with jitter in one ChangeMessageVisibilityBatch; a batch in which every record
 * failed throws so Lambda scales its poller down.
 *
 * A processor is created per invocation: Powertools processors keep per-batch state, and the local event
 * source mapping may run several invocations of one handler at once.
 *
 * @example
 * ```ts
 * const sql = createSql(config.database);
 * export const handler = createWorker({ consumer: 'case-worker', handlers: exampleHandlers, sql, sqs: new SQSClient({}) });
 * ```
 */
export function createWorker(options: WorkerOptions): WorkerHandler {
  const registry = createHandlerRegistry(options.handlers);
  const poolSize = options.sql.options?.max ?? 1;
  const recordConcurrency = options.recordConcurrency ?? WORKER_DEFAULTS.recordConcurrency;
  const problems: string[] = [];
  if (!options.consumer || options.consumer.length > 100) {
    problems.push(`consumer must be 1–100 characters (given "${options.consumer}")`);
  }
  if (!Number.isInteger(recordConcurrency) || recordConcurrency < 1 || recordConcurrency > poolSize) {
    problems.push(
      `recordConcurrency must be a whole number from 1 to the pool size ${poolSize} (given ${recordConcurrency}); raise the pool size (postgres max) or lower recordConcurrency`,
    );
  }
  if (options.commitMode === 'per-batch' && options.sql.options?.fetch_types === false) {
    problems.push(
      'commitMode per-batch claims a batch with arrays, which a postgres.js client with fetch_types: false cannot send; leave fetch_types on (the default)',
    );
  }
  if (options.commitMode === 'per-batch' && recordConcurrency !== 1) {
    problems.push(
      `commitMode per-batch runs records one after another in one transaction; set recordConcurrency to 1 (given ${recordConcurrency})`,
    );
  }
  const maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  if (!Number.isInteger(maxPayloadBytes) || maxPayloadBytes < 1) {
    problems.push(
      `maxPayloadBytes must be a whole number of bytes above 0 (given ${maxPayloadBytes}); the default is ${DEFAULT_MAX_PAYLOAD_BYTES} (64 MiB)`,
    );
  }
  if (problems.length > 0) throw new ConfigError(`Invalid worker options:\n- ${problems.join('\n- ')}`);

  const logger =
    options.logger ?? new Logger({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? options.consumer });
  const metrics =
    options.metrics ??
    new Metrics({
      namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? DEFAULT_METRICS_NAMESPACE,
      serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? options.consumer,
    });
  const resolveSqs = sqsClientResolver(options.sqs, logger);
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const backoff: BackoffSettings = {
    baseSeconds: WORKER_DEFAULTS.backoffBaseSeconds,
    maxSeconds: WORKER_DEFAULTS.backoffMaxSeconds,
    ...options.backoff,
  };
  const guard = new DeadlineGuard(options.deadlineGuardMs);
  /** Per-batch mode: whether this environment's next batch runs with a savepoint per record. */
  let savepointsNeeded = false;
  const perMessage: TransactionRunner = (fn) => options.sql.begin(fn) as never;
  const baseDeps: RecordDependencies = {
    consumer: options.consumer,
    registry,
    transaction: perMessage,
    bookkeeping: perMessage,
    terminalPolicy: options.terminalPolicy ?? WORKER_DEFAULTS.terminalPolicy,
    attemptDefaults: {
      maxBusinessAttempts: options.maxBusinessAttempts ?? WORKER_DEFAULTS.maxBusinessAttempts,
    },
    backoff,
    now,
    random,
    payloads: { s3: s3ClientResolver(options.s3, logger), maxBytes: maxPayloadBytes },
    completedAlready: async (idempotencyKey, requestHash) => {
      const [row] = await options.sql<{ completed: boolean }[]>`
        select request_hash = ${requestHash} and status = 'COMPLETED' as completed
        from worker_inbox where consumer = ${options.consumer} and idempotency_key = ${idempotencyKey}
      `;
      return row?.completed === true;
    },
  };

  return async function handler(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
    const records = event.Records ?? [];
    const arn = records[0]?.eventSourceARN ?? '';
    const queue = arn.split(':').at(-1) ?? '';
    const fifo = arn.endsWith('.fifo');
    // Per-batch mode keeps time back for the batch's COMMIT: the records see that much less time left.
    const reserveMs = options.commitMode === 'per-batch' ? BATCH_COMMIT_RESERVE_MS : 0;
    const batch: BatchState = {
      databaseDown: false,
      remainingMs: () => context.getRemainingTimeInMillis() - reserveMs,
    };
    const outcomes = new Map<string, RecordOutcome>();
    const limit = pLimit(recordConcurrency);

    const runRecord = (deps: RecordDependencies) => async (record: SQSRecord) => {
      const outcome = await limit(async () => {
        // The guard is what a record needs; its handler gets the time left less what settling it takes.
        if (batch.remainingMs() - HANDLER_MARGIN_MS < guard.guardMs()) return deferred(record);
        const result = await processRecord(record, deps, batch);
        guard.observe(result.processingMs);
        return result;
      });
      outcomes.set(record.messageId, outcome);
      if (!outcome.acknowledged) throw new Error(`${outcome.result} ${outcome.failureCode ?? ''}`.trim());
      return outcome.result;
    };
    const run = (deps: RecordDependencies) => {
      const fn = runRecord(deps);
      return fifo
        ? processPartialResponse(event, fn, new SqsFifoPartialProcessorAsync(), {
            context,
            skipGroupOnError: true,
            throwOnFullBatchFailure: false,
          })
        : processPartialResponse(event, fn, new BatchProcessor(EventType.SQS), {
            context,
            throwOnFullBatchFailure: false,
            processInParallel: deps.transaction === perMessage,
          });
    };

    let response: SQSBatchResponse;
    if (options.commitMode === 'per-batch') {
      // Decoded once, for the reads, the batch claim and the records; referenced payloads are read before the
      // batch transaction opens, so no connection waits on S3.
      const decoded = new Map(records.map((record) => [record.messageId, decodeRecord(record, registry)]));
      const resolved = await resolveBatchPayloads(decoded);
      response = await runBatchTransaction((deps) => run({ ...deps, resolved }), decoded, resolved);
    } else {
      response = await run(baseDeps);
    }

    if (fifo) blockSkippedGroupMembers(response);
    for (const outcome of outcomes.values()) recordTelemetry(outcome, { logger, metrics, queue });
    metrics.addMetric(METRIC_NAMES.batchSize, MetricUnit.Count, records.length);
    metrics.publishStoredMetrics();

    if (options.sqs && arn) {
      const reported = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
      const changes = records.flatMap((record) => {
        const seconds = outcomes.get(record.messageId)?.visibilitySeconds;
        return reported.has(record.messageId) && seconds !== undefined
          ? [{ messageId: record.messageId, receiptHandle: record.receiptHandle, visibilitySeconds: seconds }]
          : [];
      });
      if (changes.length > 0) {
        // Loaded on the first backoff only: the SQS client code is a chunk of its own in the bundle. Like a
        // failed visibility change, a module that cannot load is logged and changes no outcome.
        const [backoffModule, sqs] = await Promise.all([
          import('./apply-backoff.ts').catch((error: unknown) => {
            logger.warn('worker_backoff_unavailable', { error: String(error) });
            return undefined;
          }),
          resolveSqs(),
        ]);
        if (backoffModule && sqs) await backoffModule.applyBackoff(sqs, arn, changes, logger);
      }
    }

    // Every record failed: throw, so Lambda counts an error and scales the poller down. Records that are only
    // waiting — for their notBefore, or for a copy of the message in flight elsewhere (answered at once, see
    // claimInbox) — are not failures of this worker and never trigger it.
    const failed = response.batchItemFailures.length;
    const waiting = [...outcomes.values()].some(
      (outcome) => outcome.result === 'NOT_YET_DUE' || outcome.failureCode === 'IN_PROGRESS_ELSEWHERE',
    );
    if (
      (options.failInvocationOnFullBatchFailure ?? WORKER_DEFAULTS.failInvocationOnFullBatchFailure) &&
      records.length > 0 &&
      failed === records.length &&
      !waiting
    ) {
      const codes = [
        ...new Set([...outcomes.values()].map((outcome) => outcome.failureCode ?? outcome.result)),
      ];
      throw new BatchFailedError(
        records.map((record) => record.messageId),
        codes.join(', '),
      );
    }
    return response;

    /**
     * FIFO: records after a group's first failure were reported without running. They are in flight, and SQS
     * delivers nothing more of a group while one of its messages is in flight, so they get the visibility of
     * the failure that blocked them: the group comes back together, in order.
     */
    function blockSkippedGroupMembers(result: SQSBatchResponse): void {
      const blockedAt = new Map<string, RecordOutcome>();
      for (const record of records) {
        const group = record.attributes?.MessageGroupId ?? '';
        const outcome = outcomes.get(record.messageId);
        if (outcome && !outcome.acknowledged && !blockedAt.has(group)) blockedAt.set(group, outcome);
      }
      const reported = new Set(result.batchItemFailures.map((failure) => failure.itemIdentifier));
      for (const record of records) {
        if (outcomes.has(record.messageId) || !reported.has(record.messageId)) continue;
        const blocker = blockedAt.get(record.attributes?.MessageGroupId ?? '');
        outcomes.set(record.messageId, {
          messageId: record.messageId,
          result: 'RETRYABLE_FAILURE',
          acknowledged: false,
          visibilitySeconds: blocker?.visibilitySeconds,
          failureCode: 'FIFO_GROUP_BLOCKED',
          failureMessage: `not run: an earlier message of its group failed (${blocker?.failureCode ?? 'unknown'})`,
          receiveCount: Number(record.attributes?.ApproximateReceiveCount) || 1,
          processingMs: 0,
          dbTransactionMs: 0,
          messageAgeMs: 0,
        });
      }
    }

    /** A record not started because the Lambda timeout is near: reported, visible again at once. */
    function deferred(record: SQSRecord): RecordOutcome {
      return {
        messageId: record.messageId,
        result: 'DEADLINE_DEFERRED',
        acknowledged: false,
        visibilitySeconds: 0,
        failureCode: 'DEADLINE_DEFERRED',
        failureMessage: `not started: ${batch.remainingMs() - HANDLER_MARGIN_MS} ms left for a handler, guard ${guard.guardMs()} ms`,
        receiveCount: Number(record.attributes?.ApproximateReceiveCount) || 1,
        processingMs: 0,
        dbTransactionMs: 0,
        messageAgeMs: 0,
      };
    }

    /** Per-batch mode: reads the referenced payloads of the batch's due records, a few at a time. */
    async function resolveBatchPayloads(
      decoded: ReadonlyMap<string, DecodedRecord | UndecodableRecord>,
    ): Promise<ReadonlyMap<string, ResolvedPayload>> {
      const resolved = new Map<string, ResolvedPayload>();
      const reads = pLimit(4);
      await Promise.all(
        [...decoded].map(([messageId, d]) =>
          d.ok && d.pendingRef && msUntilDue(d.envelope.attemptPolicy, now()) <= 0
            ? reads(async () => {
                // A duplicate of a completed message is not read again (see RecordDependencies.completedAlready);
                // when the lookup fails the object is read anyway: every read happens here, outside the batch
                // transaction.
                const duplicate = await withinDeadline(
                  baseDeps.completedAlready(d.envelope.idempotencyKey, d.requestHash),
                  batch.remainingMs() - CLIENT_DEADLINE_MARGIN_MS,
                ).catch(() => false);
                // The reads leave the records time to start (the deadline guard) and to settle: a read that
                // timed out is then counted as an attempt, not deferred unread again and again.
                const readBudgetMs = batch.remainingMs() - 2 * HANDLER_MARGIN_MS - guard.guardMs();
                resolved.set(
                  messageId,
                  duplicate
                    ? { ok: true, decoded: d }
                    : await resolvePayload(d, baseDeps.payloads, readBudgetMs),
                );
              })
            : undefined,
        ),
      );
      return resolved;
    }

    /**
     * Claims the inbox rows of every record that will run the usual way (a valid, due envelope whose key is
     * unique in the batch) in one statement. Records left out — and every record when the claim cannot be
     * made (a key in flight elsewhere) — claim one by one. Without `savepoint` a failed claim throws.
     */
    async function claimWholeBatch(
      tx: postgres.TransactionSql,
      decoded: ReadonlyMap<string, DecodedRecord | UndecodableRecord>,
      resolved: ReadonlyMap<string, ResolvedPayload>,
      savepoint: boolean,
    ): Promise<BatchClaims | undefined> {
      const keyCount = new Map<string, number>();
      for (const d of decoded.values()) {
        const key = d.ok ? d.envelope.idempotencyKey : d.idempotencyKey;
        if (key) keyCount.set(key, (keyCount.get(key) ?? 0) + 1);
      }
      const entries: InboxEntry[] = records.flatMap((record) => {
        const d = decoded.get(record.messageId);
        if (!d?.ok || keyCount.get(d.envelope.idempotencyKey) !== 1) return [];
        if (msUntilDue(d.envelope.attemptPolicy, now()) > 0) return []; // NOT_YET_DUE: it claims nothing
        const payload = resolved.get(record.messageId);
        if (payload?.ok === false) return []; // its payload failed: settled on its own
        return [
          {
            consumer: options.consumer,
            envelope: d.envelope,
            requestHash: d.requestHash,
            sqsMessageId: record.messageId,
            resultRef: declaredResultRef(payload?.decoded ?? d),
          },
        ];
      });
      if (entries.length < 2) return undefined;
      return claimBatch(tx, entries, { savepoint });
    }

    /**
     * Per-batch commit mode: one transaction for the batch, one COMMIT. If the commit fails, nothing of the batch
     * happened: every record is reported retryable.
     *
     * A record's writes can only be undone alone inside a savepoint, and postgres.js waits for each SAVEPOINT
     * before the record's first statement: one round trip per record, ~20 % of per-batch throughput. So while
     * this environment's batches need no rollback, a batch runs without savepoints; when a record fails, that
     * attempt is rolled back whole (records after it are not started) and the batch runs again with a savepoint
     * per record, which reports the failure and commits the rest. The redo is what a redelivery would be: the
     * inbox makes it exactly-once. Batches keep their savepoints until one completes without a rollback. The
     * batch claim goes the same way: without a savepoint first; if it fails (a key in flight elsewhere), the redo
     * claims record by record instead of waiting for the same lock again.
     */
    async function runBatchTransaction(
      process: (deps: RecordDependencies) => Promise<SQSBatchResponse>,
      decoded: ReadonlyMap<string, DecodedRecord | UndecodableRecord>,
      resolved: ReadonlyMap<string, ResolvedPayload>,
    ): Promise<SQSBatchResponse> {
      let batchClaim = !fifo;
      if (!savepointsNeeded) {
        const attempt = await batchAttempt(process, false, batchClaim, decoded, resolved);
        if (!attempt.rolledBack) return attempt.response;
        savepointsNeeded = true;
        if (!attempt.aborted) return attempt.response; // the transaction itself failed: reported whole
        if (attempt.claimFailed) batchClaim = false;
        // The redo runs again the handlers whose effects the aborted attempt rolled back: anything they did
        // outside the transaction happens twice (external effects belong in the effect log).
        const reruns = [...outcomes.values()].filter(
          (outcome) => outcome.result === 'COMPLETED' || outcome.result === 'STALE_VERSION_SKIPPED',
        ).length;
        if (reruns > 0) metrics.addMetric(METRIC_NAMES.handlerReruns, MetricUnit.Count, reruns);
        outcomes.clear();
      }
      const attempt = await batchAttempt(process, true, batchClaim, decoded, resolved);
      savepointsNeeded = attempt.rolledBack;
      return attempt.response;
    }

    /**
     * One batch transaction, with a savepoint per record or without. `rolledBack`: a record's transaction
     * failed; `aborted`: it failed without savepoints, so the whole attempt was rolled back and nothing of it
     * counts (its outcomes are to be discarded).
     */
    async function batchAttempt(
      process: (deps: RecordDependencies) => Promise<SQSBatchResponse>,
      withSavepoints: boolean,
      batchClaim: boolean,
      decoded: ReadonlyMap<string, DecodedRecord | UndecodableRecord>,
      resolved: ReadonlyMap<string, ResolvedPayload>,
    ): Promise<{
      response: SQSBatchResponse;
      rolledBack: boolean;
      aborted: boolean;
      /** A batch claim made without a savepoint failed (a key in flight elsewhere). */
      claimFailed: boolean;
    }> {
      const started = now();
      let rolledBack = false;
      let claimFailed = false;
      /** Records whose transaction has not settled: one given up on by its deadline may still be running. */
      let unsettled = 0;
      try {
        // The whole batch transaction, commit included, is bounded by the Lambda time left.
        const response = (await withinDeadline(
          options.sql.begin(async (tx) => {
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
              ? await claimWholeBatch(tx, decoded, resolved, withSavepoints).catch((error: unknown) => {
                  // Only without a savepoint does a failed claim throw: this attempt is over.
                  claimFailed = true;
                  rolledBack = true;
                  throw new BatchAttemptAbortedError({ cause: error });
                })
              : undefined;
            const result = await process({
              ...baseDeps,
              transaction: runner,
              bookkeeping: runner,
              batchClaims,
              decoded,
            });
            if (rolledBack && !withSavepoints) throw new BatchAttemptAbortedError();
            // Never commit under a record that was given up on while its statements may still run: the batch
            // is rolled back and reported whole.
            if (unsettled > 0) throw new BatchRecordUnsettledError(unsettled);
            await batchClaims?.finish();
            return result;
          }) as Promise<SQSBatchResponse>,
          context.getRemainingTimeInMillis() - CLIENT_DEADLINE_MARGIN_MS,
        )) as SQSBatchResponse;
        return { response, rolledBack, aborted: false, claimFailed };
      } catch (error) {
        if (error instanceof BatchAttemptAbortedError && !batch.databaseDown) {
          return { response: { batchItemFailures: [] }, rolledBack: true, aborted: true, claimFailed };
        }
        const code = (error as { code?: string }).code ?? 'BATCH_COMMIT_FAILED';
        for (const record of records) {
          const previous = outcomes.get(record.messageId);
          // Records that never touched the database keep their outcome (and their visibility).
          if (previous?.result === 'NOT_YET_DUE' || previous?.result === 'DEADLINE_DEFERRED') continue;
          const receiveCount = Number(record.attributes?.ApproximateReceiveCount) || 1;
          outcomes.set(record.messageId, {
            messageId: record.messageId,
            receiveCount,
            processingMs: now() - started,
            dbTransactionMs: now() - started,
            messageAgeMs: previous?.messageAgeMs ?? 0,
            messageType: previous?.messageType,
            idempotencyKey: previous?.idempotencyKey,
            aggregateId: previous?.aggregateId,
            correlationId: previous?.correlationId,
            result: 'RETRYABLE_FAILURE',
            acknowledged: false,
            visibilitySeconds: backoffSeconds(receiveCount, backoff, random),
            failureCode: 'BATCH_COMMIT_FAILED',
            failureMessage: `the batch transaction did not commit (${code}); every record is retried`,
          });
        }
        return {
          response: { batchItemFailures: records.map((record) => ({ itemIdentifier: record.messageId })) },
          rolledBack: true,
          aborted: false,
          claimFailed,
        };
      }
    }
  };
}
