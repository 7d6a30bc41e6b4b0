import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { truncate } from '../../worker/classify-error.ts';
import type { EngineSettings } from '../../worker/commit-strategy.ts';
import { receiveCountOf } from '../../worker/outcome.ts';
import { readReferencedPayload } from '../../worker/read-referenced-payload.ts';
import type {
  FailedDelivery,
  FailureBook,
  Gate,
  RecordStore,
  StoreCalls,
} from '../../worker/record-store.ts';
import { claimDynamoInbox, type DynamoGate, dynamoCompletedAlready } from './claim-dynamo-inbox.ts';
import { classifyDynamoError } from './classify-dynamo-error.ts';
import { completeDynamoRecord } from './complete-dynamo-record.ts';
import { countDynamoDuplicate } from './count-dynamo-duplicate.ts';
import { documentClient } from './document-client.ts';
import type { DynamoHandlerResult } from './dynamo-handler.ts';
import type { DynamoStore } from './dynamo-store.ts';
import { DynamoCancellationError, LeaseLostError } from './errors.ts';
import {
  failInboxUpdate,
  freezeMismatchUpdate,
  type InboxUpdate,
  type LeaseAttempt,
} from './inbox-updates.ts';
import { quarantineUpdate } from './quarantine-update.ts';

/**
 * The DynamoDB store's claim token: the lease this delivery holds on the inbox item.
 *
 * @internal
 */
export interface DynamoClaim {
  readonly leaseToken: string;
  /** The attempt the lease is for, as its history entry records it. */
  readonly attempt: LeaseAttempt;
}

/**
 * Settings of {@link dynamoRecordStore}: the engine's.
 *
 * @internal
 */
export type DynamoRecordSettings = Pick<EngineSettings, 'consumer' | 'now' | 'payloads' | 'workerVersion'>;

/**
 * The DynamoDB store's record primitives (`record-store.ts`, docs/dynamodb.md). There is no transaction around an
 * attempt: its unit is the record's calls. The gate is a conditional PutItem of a PROCESSING inbox item (a lease;
 * duplicates, mismatches, terminal and in-flight keys decided from the existing item); the handler returns its
 * writes, committed with the inbox item's completion in ONE TransactWriteItems under the lease. The attempt was
 * counted when the lease was taken (durable): the bookkeeping writes FAILED_RETRYABLE, or FAILED_TERMINAL with the
 * quarantine item, in one write under the lease. A key this delivery does not hold is not written, but for one
 * change: a key reused by another request is frozen FAILED_TERMINAL (`freezeMismatchUpdate`), as on PostgreSQL.
 * SQS's receive count is such a delivery's count, and its quarantine item is written.
 *
 * @internal
 */
export function dynamoRecordStore(
  store: DynamoStore,
  settings: DynamoRecordSettings,
): RecordStore<StoreCalls, DynamoClaim> {
  const { consumer, now, workerVersion } = settings;
  const classify = (error: unknown) =>
    error instanceof DynamoCancellationError ? error.failure : classifyDynamoError(error);
  return {
    name: 'DynamoDB',
    classify,
    referencedPayload: (_record, decoded, calls) =>
      readReferencedPayload(decoded, calls, {
        completedAlready: (key, hash) => dynamoCompletedAlready(store, consumer, key, hash),
        classify,
        payloads: settings.payloads,
      }),
    attempt: (calls, work) => work(calls),
    async claim(calls, request) {
      const { decoded } = request;
      const entry = {
        consumer,
        envelope: decoded.envelope,
        requestHash: decoded.requestHash,
        sqsMessageId: request.record.messageId,
        traceId: request.traceId,
        workerVersion,
      };
      const countCopy = (known: boolean, lastMessageId?: string) =>
        calls.timed((signal) =>
          countDynamoDuplicate(
            store,
            { ...entry, idempotencyKey: decoded.envelope.idempotencyKey },
            { known, lastMessageId, nowMs: now(), signal },
          ),
        );
      // The read that found the key COMPLETED with this request answers (no gate put): only the copy is counted.
      if (request.knownCompleted) return { kind: 'duplicate', copy: await countCopy(false) };
      const gate = await calls.timed((signal) =>
        claimDynamoInbox(store, entry, {
          nowMs: now(),
          leaseMs: calls.remainingMs() + store.leaseMarginMs,
          signal,
        }),
      );
      if (gate.kind !== 'duplicate') {
        return recordGate(gate, (attempts) => leaseAttempt(request.record, attempts, workerVersion));
      }
      return { kind: 'duplicate', attempts: gate.attempts, copy: await countCopy(true, gate.lastMessageId) };
    },
    // The item belongs to the other request: it is left as it is.
    async markMismatch(calls, request, failure) {
      const update = freezeMismatchUpdate(store, {
        consumer,
        idempotencyKey: request.decoded.envelope.idempotencyKey,
        requestHash: request.decoded.requestHash,
        ...failure,
        nowMs: now(),
      });
      try {
        await calls.timed((signal) =>
          documentClient(store).send(new UpdateCommand(update), { abortSignal: signal }),
        );
      } catch (error) {
        // Completed or taken meanwhile: that delivery's state stands.
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      }
    },
    async quarantine(calls, record, reason) {
      const update = quarantineUpdate(store, { consumer, record, reason, nowMs: now(), workerVersion });
      await calls.timed((signal) =>
        documentClient(store).send(new UpdateCommand(update), { abortSignal: signal }),
      );
    },
    handlerScope: () => ({
      handle: { client: documentClient(store), table: store.tableName },
      close: () => {},
    }),
    complete: (calls, request, { leaseToken, attempt }, result) =>
      completeDynamoRecord(store, calls, {
        consumer,
        idempotencyKey: request.decoded.envelope.idempotencyKey,
        leaseToken,
        attempt,
        result: result as DynamoHandlerResult | undefined,
        nowMs: now(),
      }),
    settle: (calls, failed, work) => settleDynamoFailure(store, settings, calls, failed, work),
  };
}

/** The attempt a lease is for, as the item's history records it. */
function leaseAttempt(record: SQSRecord, attempt: number, version: string): LeaseAttempt {
  return { version, messageId: record.messageId, attempt, receiveCount: receiveCountOf(record) };
}

/**
 * The bookkeeping of a failure on DynamoDB: the writes the template asks for, sent as one request at the end —
 * the inbox item's failure under the lease (UpdateItem), with the quarantine item (TransactWriteItems), or the
 * quarantine item alone for a delivery that holds no lease. Nothing is sent when nothing is to be written.
 */
async function settleDynamoFailure<T>(
  store: DynamoStore,
  { consumer, now, workerVersion }: DynamoRecordSettings,
  calls: StoreCalls,
  failed: FailedDelivery<DynamoClaim>,
  work: (book: FailureBook) => Promise<T>,
): Promise<T> {
  const { claim, decoded, record } = failed;
  let inbox: InboxUpdate | undefined;
  let quarantine: ReturnType<typeof quarantineUpdate> | undefined;
  const book: FailureBook = {
    // SQS's receive count is the count of a delivery without a lease; a lease's attempt was counted when taken.
    count: async () => undefined,
    async recordFailure(decided) {
      // A key cancelled while this copy held its lease: the operator's CANCELLED item stands (no lease to write under).
      if (!claim || !decoded.envelope || decided.code === 'CANCELLED') return;
      inbox = failInboxUpdate(store, {
        consumer,
        idempotencyKey: decoded.envelope.idempotencyKey,
        leaseToken: claim.leaseToken,
        status: decided.retryable ? 'FAILED_RETRYABLE' : 'FAILED_TERMINAL',
        code: decided.code,
        message: truncate(decided.message),
        nowMs: now(),
        attempt: claim.attempt,
      });
    },
    async quarantine(reason) {
      quarantine = quarantineUpdate(store, { consumer, record, reason, nowMs: now(), workerVersion });
    },
  };
  const verdict = await work(book);
  const update = inbox ?? quarantine;
  if (!update) return verdict;
  const client = documentClient(store);
  try {
    await calls.timed<unknown>((signal) =>
      inbox && quarantine
        ? client.send(
            new TransactWriteCommand({ TransactItems: [{ Update: inbox }, { Update: quarantine }] }),
            {
              abortSignal: signal,
            },
          )
        : client.send(new UpdateCommand(update), { abortSignal: signal }),
    );
  } catch (error) {
    const leaseGone =
      claim !== undefined &&
      (error instanceof ConditionalCheckFailedException ||
        (error instanceof TransactionCanceledException &&
          error.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed'));
    throw leaseGone ? new LeaseLostError({ cause: error }) : error;
  }
  return verdict;
}

/** The engine's gate of a DynamoDB gate other than a duplicate (which counts its copy first). */
function recordGate(
  gate: Exclude<DynamoGate, { kind: 'duplicate' }>,
  attemptOf: (attempts: number) => DynamoClaim['attempt'],
): Gate<DynamoClaim> {
  switch (gate.kind) {
    case 'claimed': {
      const { attempts, leaseToken } = gate;
      return {
        kind: gate.takenOver ? 'retry' : 'new',
        attempts,
        durable: true,
        claim: { leaseToken, attempt: attemptOf(attempts) },
      };
    }
    case 'inProgress':
      return {
        kind: 'inProgress',
        message: 'another delivery of this idempotency key holds its inbox lease right now',
      };
    case 'hashMismatch':
      return { kind: 'hashMismatch', status: gate.status };
    case 'cancelled':
      return { kind: 'cancelled', attempts: gate.attempts };
    default:
      return { kind: 'terminal', failureCode: gate.failureCode };
  }
}
