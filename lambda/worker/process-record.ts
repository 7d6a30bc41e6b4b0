import { HandlerTimeoutError, RetryableError } from '../errors.ts';
import { applyAttemptPolicy } from './attempt-policy.ts';
import type { Failure } from './classify-error.ts';
import type { BatchRecord, BatchState, EngineSettings } from './commit-strategy.ts';
import { HANDLER_MARGIN_MS } from './deadline-margins.ts';
import { type RecordOutcome, type Verdict, verdicts } from './outcome.ts';
import { type PreparedRecord, prepareRecord } from './prepare-record.ts';
import type { QuarantineReason } from './quarantine-reason.ts';
import { decodedIds, type RecordRun, startRecordRun } from './record-run.ts';
import type { ClaimRequest, GateCount, RecordStore, StoreCalls } from './record-store.ts';
import { redactValues } from './redact-values.ts';
import { withinDeadline } from './within-deadline.ts';

/**
 * The engine's settings the record template uses.
 *
 * @internal
 */
export type RecordSettings = Pick<
  EngineSettings,
  'consumer' | 'terminalPolicy' | 'attemptDefaults' | 'backoff' | 'retryPolicy' | 'now' | 'random' | 'tracer'
>;

/** One record being processed: what every step of the template reads. */
interface RecordContext<Unit, Claim> {
  readonly item: BatchRecord;
  readonly run: RecordRun;
  readonly store: RecordStore<Unit, Claim>;
  readonly settings: RecordSettings;
}

/** What the gate counted of this delivery, and the claim it holds (`new` / `retry`). */
type Held<Claim> = GateCount & { readonly claim?: Claim };

type Ready = Extract<PreparedRecord, { kind: 'ready' }>;

/**
 * Failure codes that mean another delivery holds the key right now (a copy in flight, a lease taken over): that
 * delivery writes the key, so the failure is reported without bookkeeping.
 */
const HELD_ELSEWHERE: ReadonlySet<string> = new Set(['IN_PROGRESS_ELSEWHERE', 'LEASE_LOST']);

/** Why a delivery of a cancelled key is quarantined (no payload value). */
const CANCELLED_MESSAGE =
  'an operator cancelled this idempotency key (sqs-worker inbox cancel); the message was not applied';

/** A store's calls for one record: timed into its run, bounded by the batch's time left. */
const callsOf = (run: RecordRun): StoreCalls => ({
  timed: (call) => run.timed(call),
  remainingMs: () => run.batch.remainingMs(),
});

/**
 * The record template: one record end to end, the decision tree written once for every store (DESIGN.md "Path of
 * one message"). The database failed earlier in the batch → reported unattempted; prepare (decode, `notBefore`,
 * `payloadRef`); then one attempt in the store's unit of work — claim (the gate), decide, run the handler within its
 * budget, complete; on failure: classify, apply the attempt policy, settle (bookkeeping) or quarantine. The store
 * supplies the primitives (`record-store.ts`); every outcome is decided here. Never throws, and a message is
 * acknowledged only when its effect (or its quarantine record) is committed.
 *
 * @internal
 */
export async function processRecord<Unit, Claim>(
  item: BatchRecord,
  store: RecordStore<Unit, Claim>,
  settings: RecordSettings,
  batch: BatchState,
): Promise<RecordOutcome> {
  const run = await startRecordRun(
    item.record,
    item.receiveCount,
    { ...settings, ...(store.abandoned ? { abandoned: store.abandoned } : {}) },
    batch,
  );
  run.ids = decodedIds(item.decoded, run.trace?.traceId);
  if (batch.databaseDown) {
    return run.finish(
      run.retry({
        code: 'DATABASE_UNAVAILABLE',
        message: `not attempted: ${store.name} failed earlier in this batch`,
      }),
    );
  }
  const ctx: RecordContext<Unit, Claim> = { item, run, store, settings };
  const prepared = await prepareRecord(item, settings, (decoded) =>
    store.referencedPayload(item.record, decoded, callsOf(run)),
  );
  if (prepared.kind === 'decided') return run.finish(prepared.verdict);
  if (prepared.kind === 'failed') return run.finish(await settleFailure(ctx, prepared.failure));
  return run.finish(await attemptRecord(ctx, prepared));
}

/**
 * One attempt in the store's unit of work: the gate's answer decided, the handler run and the key completed. A
 * throw rolls the unit back and settles the failure, except when it was a terminal decision of the gate being
 * written (its quarantine): the record is then reported, never acknowledged without its quarantine record.
 */
async function attemptRecord<Unit, Claim>(r: RecordContext<Unit, Claim>, ready: Ready): Promise<Verdict> {
  const { item, run, store } = r;
  const { decoded, message } = ready;
  const request: ClaimRequest = {
    record: item.record,
    decoded,
    message,
    traceId: run.trace?.traceId,
    knownCompleted: ready.knownCompleted,
  };
  let held: Held<Claim> | undefined;
  let gateTerminal: Pick<Failure, 'code' | 'message'> | undefined;
  const handler: { thrown?: unknown } = {};
  try {
    return await store.attempt(callsOf(run), async (unit) => {
      const gate = await store.claim(unit, request);
      if (gate.kind === 'inProgress') throw new RetryableError('IN_PROGRESS_ELSEWHERE', gate.message);
      held = { attempts: gate.attempts, durable: gate.durable };
      if (gate.kind === 'hashMismatch') {
        gateTerminal = {
          code: 'IDEMPOTENCY_HASH_MISMATCH',
          message: `idempotency key already used by a different request (inbox status ${gate.status}); the new message was not applied`,
        };
        await store.markMismatch(unit, request, gateTerminal);
        return terminalAtGate(r, unit, gateTerminal, gate.attempts, true);
      }
      if (gate.kind === 'cancelled') {
        gateTerminal = { code: 'CANCELLED', message: CANCELLED_MESSAGE };
        return terminalAtGate(r, unit, gateTerminal, gate.attempts);
      }
      if (gate.kind === 'duplicate') return verdicts.duplicate(gate.attempts, gate.copy);
      if (message.pendingRef) {
        // Its payload was left unread because the key looked completed, and it is not (purged since).
        throw new RetryableError(
          'PAYLOAD_NOT_READ',
          'the payload was not read because the key looked completed; it is read on the next delivery',
        );
      }
      if (gate.kind === 'terminal') {
        gateTerminal = {
          code: gate.failureCode ?? 'PREVIOUSLY_TERMINAL',
          message:
            'this idempotency key already failed terminally; fix the cause, then release it from quarantine',
        };
        return terminalAtGate(r, unit, gateTerminal, gate.attempts);
      }
      held = { ...held, claim: gate.claim };
      const result = await runHandler(r, unit, ready, handler);
      const { stale } = await store.complete(unit, request, gate.claim, result);
      return verdicts.completed(gate.attempts, stale);
    });
  } catch (error) {
    const cause = store.classify(error);
    if (gateTerminal) {
      const quarantining = r.settings.terminalPolicy === 'quarantine';
      const attempts = held?.durable ? held.attempts : undefined;
      return run.unsettled(gateTerminal, cause, attempts, quarantining ? 'quarantine' : 'bookkeeping');
    }
    if (error !== handler.thrown) return settleFailure(r, cause, held);
    // A handler's message is its author's text: values of the payload it quotes are taken out before the message is
    // logged or stored (a safety net; docs/writing-handlers.md asks for messages without values). The payload as the
    // handler saw it: for a `payloadRef`, the one read from S3 (`decoded` has none yet).
    const redacted = redactValues(cause.message, [decoded.envelope.payload, message.payload]);
    return settleFailure(r, { ...cause, message: redacted }, held);
  }
}

/**
 * Runs the handler with the store's scope, within its budget: the batch's time left less the margin to roll back and
 * count the attempt. Past the budget the scope is closed with what it still runs (PostgreSQL cancels its statements
 * and rolls back at once), so a handler that wakes up later can no longer reach the store. What it throws is kept in
 * `failed.thrown` (and thrown on unchanged, through the store's transaction): its text is the handler author's.
 */
async function runHandler<Unit, Claim>(
  r: RecordContext<Unit, Claim>,
  unit: Unit,
  ready: Ready,
  failed: { thrown?: unknown },
): Promise<unknown> {
  const scope = r.store.handlerScope(unit);
  const budgetMs = r.run.batch.remainingMs() - HANDLER_MARGIN_MS;
  // The store refused the worker's options for a handler of another store: this one takes its scope.
  const handler = ready.message.handler as unknown as { handle(context: object): Promise<unknown> };
  try {
    return await withinDeadline(handler.handle({ ...scope.handle, ...ready.context }), budgetMs, (waited) => {
      scope.close({ cancelRunning: true });
      return new HandlerTimeoutError(waited);
    });
  } catch (error) {
    failed.thrown = error;
    throw error;
  } finally {
    scope.close();
  }
}

/** A terminal decision of the gate, written in the attempt's unit (its quarantine record, policy `quarantine`). */
async function terminalAtGate<Unit, Claim>(
  r: RecordContext<Unit, Claim>,
  unit: Unit,
  failure: Pick<Failure, 'code' | 'message'>,
  attempts: number | undefined,
  hashMismatch = false,
): Promise<Verdict> {
  const quarantined = r.settings.terminalPolicy === 'quarantine';
  if (quarantined) await r.store.quarantine(unit, r.item.record, reasonOf(r.run, failure));
  return verdicts.terminal(failure, { quarantined, attempts, hashMismatch });
}

/**
 * Settles a failure: counts the attempt where the store keeps counts (unless the gate's count is durable), applies
 * the attempt policy, writes the failure on the key, and quarantines a terminal message, all in the store's one
 * bookkeeping unit. Skipped when the store is unreachable (the record is reported; nothing is lost, and the rest
 * of the batch does not touch it) and when another delivery holds the key (its own delivery writes it). When the
 * bookkeeping fails the record is reported, so SQS keeps it.
 */
async function settleFailure<Unit, Claim>(
  r: RecordContext<Unit, Claim>,
  failure: Failure,
  held?: Held<Claim>,
): Promise<Verdict> {
  const { item, run, store, settings } = r;
  if (failure.connection) {
    run.batch.databaseDown = true;
    return run.retry(failure, held?.attempts);
  }
  if (HELD_ELSEWHERE.has(failure.code)) return run.retry(failure, held?.attempts);
  let decided: Failure | undefined;
  const failed = {
    record: item.record,
    decoded: item.decoded,
    traceId: run.trace?.traceId,
    ...(held?.claim !== undefined ? { claim: held.claim } : {}),
  };
  try {
    return await store.settle(callsOf(run), failed, async (book) => {
      const counted = held?.durable ? held.attempts : await book.count(failure);
      decided = applyAttemptPolicy(failure, {
        policy: item.decoded.envelope?.attemptPolicy,
        attempts: counted ?? held?.attempts ?? item.receiveCount,
        now: new Date(settings.now()),
        defaults: settings.attemptDefaults,
      });
      if (counted !== undefined) await book.recordFailure(decided);
      if (decided.retryable) return run.retry(decided, counted);
      const quarantined = settings.terminalPolicy === 'quarantine';
      if (quarantined) await book.quarantine(reasonOf(run, decided));
      return verdicts.terminal(decided, { quarantined, attempts: counted });
    });
  } catch (error) {
    const cause = store.classify(error);
    if (HELD_ELSEWHERE.has(cause.code)) return run.retry(cause, held?.attempts);
    // The terminal decision whose quarantine could not be written is flagged as such (`quarantineFailed`).
    const unsettled = decided ?? failure;
    const quarantining = !unsettled.retryable && settings.terminalPolicy === 'quarantine';
    const attempts = held?.durable ? held.attempts : undefined;
    return run.unsettled(unsettled, cause, attempts, quarantining ? 'quarantine' : 'bookkeeping');
  }
}

/** A quarantine reason: the failure, with the record's key and type as decoded. */
function reasonOf(run: RecordRun, failure: Pick<Failure, 'code' | 'message'>): QuarantineReason {
  const { code, message } = failure;
  return { code, message, idempotencyKey: run.ids.idempotencyKey, messageType: run.ids.messageType };
}
