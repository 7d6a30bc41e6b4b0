import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { HandlerTimeoutError, RetryableError } from '../../errors.ts';
import { applyAttemptPolicy } from '../../worker/attempt-policy.ts';
import { type Failure, truncate } from '../../worker/classify-error.ts';
import type { BatchRecord, BatchState, EngineSettings } from '../../worker/commit-strategy.ts';
import { HANDLER_MARGIN_MS } from '../../worker/deadline-margins.ts';
import { type RecordOutcome, type Verdict, verdicts } from '../../worker/outcome.ts';
import { prepareRecord } from '../../worker/prepare-record.ts';
import { decodedIds, startRecordRun } from '../../worker/record-run.ts';
import { redactValues } from '../../worker/redact-values.ts';
import { withinDeadline } from '../../worker/within-deadline.ts';
import { claimDynamoInbox, type DynamoGate, dynamoCompletedAlready } from './claim-dynamo-inbox.ts';
import { classifyDynamoError } from './classify-dynamo-error.ts';
import { commitDynamoTransaction } from './commit-dynamo-transaction.ts';
import { documentClient } from './document-client.ts';
import type { DynamoHandlerResult, DynamoMessageHandler } from './dynamo-handler.ts';
import type { DynamoStore } from './dynamo-store.ts';
import { completeInboxUpdate, failInboxUpdate } from './inbox-updates.ts';
import { quarantineUpdate } from './quarantine-update.ts';

/**
 * Collaborators and settings of {@link processDynamoRecord}: the engine's store-free settings and the store.
 *
 * @internal
 */
export type DynamoRecordDependencies = Pick<
  EngineSettings,
  'consumer' | 'terminalPolicy' | 'attemptDefaults' | 'backoff' | 'now' | 'random' | 'payloads' | 'tracer'
> & { readonly store: DynamoStore };

/**
 * Processes one record on the DynamoDB store and decides its outcome (docs/dynamodb.md):
 * decode → the gate (conditional PutItem of a PROCESSING inbox item; duplicates, mismatches, terminal and in-flight
 * keys decided from the existing item) → the handler returns its writes → ONE TransactWriteItems of the domain items
 * and the inbox item's completion under the lease → on failure: classify (a cancelled transaction by its reasons),
 * apply the attempt policy to the attempts counted on the inbox item, write FAILED_RETRYABLE, or FAILED_TERMINAL with
 * the quarantine item in one transaction. Never throws; a record is acknowledged only when its effect (or its
 * quarantine item) is committed.
 *
 * @internal
 */
export async function processDynamoRecord(
  item: BatchRecord,
  deps: DynamoRecordDependencies,
  state: BatchState,
): Promise<RecordOutcome> {
  const { record, receiveCount } = item;
  const { store } = deps;
  // The producer's trace: on the record's log line (its outcome), its inbox item and its subsegment.
  const run = await startRecordRun(record, receiveCount, deps, state);
  const { trace, finish, retry, timed } = run;
  run.ids = decodedIds(item.decoded, trace?.traceId);
  const { ids } = run;

  const terminalVerdict = (
    failure: Pick<Failure, 'code' | 'message'>,
    quarantined: boolean,
    attempts: number | undefined,
    hashMismatch = false,
  ): Verdict => verdicts.terminal(failure, { quarantined, attempts, hashMismatch });
  const quarantineReason = (failure: Pick<Failure, 'code' | 'message'>) => ({
    ...failure,
    idempotencyKey: ids.idempotencyKey,
    messageType: ids.messageType,
  });

  if (state.databaseDown) {
    return finish(
      retry({
        code: 'DATABASE_UNAVAILABLE',
        message: 'not attempted: DynamoDB failed earlier in this batch',
      }),
    );
  }
  const prepared = await prepareRecord(item, run, deps, {
    completedAlready: (key, hash) => dynamoCompletedAlready(store, deps.consumer, key, hash),
    classify: classifyDynamoError,
    settle: (failure) => settleUnclaimed(failure),
  });
  if (prepared.kind === 'settled') return finish(prepared.verdict);
  const { decoded, message, context } = prepared;
  // A referenced payload of a key COMPLETED with this request was not read: the duplicate is acknowledged here.
  if (prepared.completedAlready) return finish(verdicts.duplicate(undefined));

  let gate: DynamoGate;
  try {
    gate = await timed(() =>
      claimDynamoInbox(
        store,
        {
          consumer: deps.consumer,
          envelope: decoded.envelope,
          requestHash: decoded.requestHash,
          sqsMessageId: record.messageId,
          traceId: trace?.traceId,
        },
        { nowMs: deps.now(), leaseMs: state.remainingMs() + store.leaseMarginMs },
      ),
    );
  } catch (error) {
    const failure = classifyDynamoError(error);
    if (failure.connection) state.databaseDown = true;
    // The gate wrote nothing: the attempt is counted by SQS alone.
    return finish(failure.retryable ? retry(failure) : await settleUnclaimed(failure));
  }

  switch (gate.kind) {
    case 'duplicate':
      return finish(verdicts.duplicate(gate.attempts));
    case 'inProgress':
      return finish(
        retry({
          code: 'IN_PROGRESS_ELSEWHERE',
          message: 'another delivery of this idempotency key holds its inbox lease right now',
        }),
      );
    case 'hashMismatch':
      return finish(
        await settleUnclaimed(
          {
            retryable: false,
            code: 'IDEMPOTENCY_HASH_MISMATCH',
            message: `idempotency key already used by a different request (inbox status ${gate.status}); the new message was not applied`,
            connection: false,
          },
          true,
        ),
      );
    case 'terminal':
      return finish(
        await settleUnclaimed({
          retryable: false,
          code: gate.failureCode ?? 'PREVIOUSLY_TERMINAL',
          message:
            'this idempotency key already failed terminally; fix the cause, then release it from quarantine',
          connection: false,
        }),
      );
    default:
      break;
  }
  const { leaseToken, attempts } = gate;
  const key = decoded.envelope.idempotencyKey;

  const handler = message.handler as unknown as DynamoMessageHandler;
  let result: DynamoHandlerResult | undefined;
  try {
    const budgetMs = state.remainingMs() - HANDLER_MARGIN_MS;
    result = await withinDeadline(
      handler.handle({ client: documentClient(store), table: store.tableName, ...context }),
      budgetMs,
      (waited) => new HandlerTimeoutError(waited),
    );
  } catch (error) {
    // A handler's message is its author's text: payload values it quotes are taken out.
    const failure = classifyDynamoError(error);
    return finish(
      await settleClaimed({
        ...failure,
        message: redactValues(failure.message, [decoded.envelope.payload, message.payload]),
      }),
    );
  }

  const writes = result?.writes ?? [];
  const resultRef = result?.resultRef;
  const completion = completeInboxUpdate(store, {
    consumer: deps.consumer,
    idempotencyKey: key,
    leaseToken,
    resultRef,
    nowMs: deps.now(),
  });
  let commit: Awaited<ReturnType<typeof commitDynamoTransaction>>;
  try {
    commit = await timed((signal) => commitDynamoTransaction(store, writes, completion, signal));
  } catch (error) {
    return finish(await settleClaimed(classifyDynamoError(error)));
  }
  if (commit.kind === 'committed') {
    return finish(verdicts.completed(attempts, result?.stale === true));
  }
  const cause = commit.cause;
  if (cause.kind === 'leaseLost') return finish(leaseLost());
  if (cause.kind === 'failure') return finish(await settleClaimed(cause.failure));

  // A domain item's condition failed: the handler's rule for that write decides.
  const rule = writes[cause.index]?.onConditionFailed;
  const ruling = rule
    ? rule(cause.current)
    : new RetryableError(
        'DOMAIN_CONDITION_FAILED',
        `the condition of domain write ${cause.index} failed and the handler gives no rule for it (onConditionFailed)`,
      );
  if (ruling instanceof Error) return finish(await settleClaimed(classifyDynamoError(ruling)));
  // Stale or already applied: the inbox item is completed alone, under the lease.
  try {
    await timed((signal) =>
      documentClient(store).send(new UpdateCommand(completion), { abortSignal: signal }),
    );
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return finish(leaseLost());
    return finish(await settleClaimed(classifyDynamoError(error)));
  }
  return finish(verdicts.completed(attempts, ruling === 'stale'));

  /** The lease was taken over (this worker was too slow): the new holder decides; nothing is written. */
  function leaseLost(): Verdict {
    return retry(
      {
        code: 'LEASE_LOST',
        message:
          'the inbox lease of this key was taken over by another delivery before this one committed; nothing was applied',
      },
      attempts,
    );
  }

  /**
   * A failure of the lease holder: the attempt policy over the attempts counted on the inbox item, then
   * FAILED_RETRYABLE, or FAILED_TERMINAL with the quarantine item in one transaction. A terminal message is never
   * acknowledged without its quarantine item.
   */
  async function settleClaimed(failure: Failure): Promise<Verdict> {
    if (failure.connection) {
      state.databaseDown = true;
      return retry(failure, attempts);
    }
    const decided = applyAttemptPolicy(failure, {
      policy: decoded.ok ? decoded.envelope.attemptPolicy : undefined,
      attempts,
      now: new Date(deps.now()),
      defaults: deps.attemptDefaults,
    });
    const inbox = failInboxUpdate(store, {
      consumer: deps.consumer,
      idempotencyKey: key,
      leaseToken,
      status: decided.retryable ? 'FAILED_RETRYABLE' : 'FAILED_TERMINAL',
      code: decided.code,
      message: truncate(decided.message),
      nowMs: deps.now(),
    });
    const quarantined = !decided.retryable && deps.terminalPolicy === 'quarantine';
    try {
      await timed<unknown>((signal) =>
        quarantined
          ? documentClient(store).send(
              new TransactWriteCommand({
                TransactItems: [
                  { Update: inbox },
                  {
                    Update: quarantineUpdate(store, {
                      consumer: deps.consumer,
                      record,
                      reason: quarantineReason(decided),
                      nowMs: deps.now(),
                    }),
                  },
                ],
              }),
              { abortSignal: signal },
            )
          : documentClient(store).send(new UpdateCommand(inbox), { abortSignal: signal }),
      );
    } catch (error) {
      const leaseGone =
        error instanceof ConditionalCheckFailedException ||
        (error instanceof TransactionCanceledException &&
          error.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed');
      if (leaseGone) return leaseLost();
      return run.unsettled(failure, classifyDynamoError(error), attempts);
    }
    return decided.retryable ? retry(decided, attempts) : terminalVerdict(decided, quarantined, attempts);
  }

  /**
   * A failure before this delivery holds a lease (an undecodable record, a payload that could not be read, a key of
   * another request, a key already terminal): the attempt policy over SQS's receive count; a terminal message gets
   * its quarantine item (policy `quarantine`). The inbox item, if any, is not this delivery's to change.
   */
  async function settleUnclaimed(failure: Failure, hashMismatch = false): Promise<Verdict> {
    if (failure.connection) {
      state.databaseDown = true;
      return retry(failure);
    }
    const decided = applyAttemptPolicy(failure, {
      policy: item.decoded.ok ? item.decoded.envelope.attemptPolicy : item.decoded.envelope?.attemptPolicy,
      attempts: receiveCount,
      now: new Date(deps.now()),
      defaults: deps.attemptDefaults,
    });
    if (decided.retryable) return retry(decided);
    const quarantined = deps.terminalPolicy === 'quarantine';
    if (quarantined) {
      try {
        await timed((signal) =>
          documentClient(store).send(
            new UpdateCommand(
              quarantineUpdate(store, {
                consumer: deps.consumer,
                record,
                reason: quarantineReason(decided),
                nowMs: deps.now(),
              }),
            ),
            { abortSignal: signal },
          ),
        );
      } catch (error) {
        return run.unsettled(decided, classifyDynamoError(error), undefined, 'quarantine');
      }
    }
    return terminalVerdict(decided, quarantined, undefined, hashMismatch);
  }
}
