import type { Message, SendMessageCommandInput } from '@aws-sdk/client-sqs';
import { DeleteMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { Clock } from './clock.ts';
import type { SqsSender } from './collaborators.ts';
import { currentActor } from './current-actor.ts';
import { OperationError, UsageError } from './errors.ts';
import type { DlqEntry } from './inspect-dlq-messages.ts';
import { inspectDlqMessages } from './inspect-dlq-messages.ts';
import type { DlqInbox, OpsStore } from './ops-store.ts';
import type { OpsOutput } from './output.ts';
import { emit, table } from './output.ts';
import { receiveBatch, releaseMessages } from './receive-batch.ts';
import { toSendAttributes } from './to-send-attributes.ts';

/** Which DLQ messages a redrive moves; every given field must match. */
export interface RedriveFilter {
  /** Envelope messageType. */
  readonly messageType?: string;
  /** Fingerprint code, as `dlq peek` shows it (inbox failure code, NO_INBOX_ROW, INVALID_ENVELOPE, …). */
  readonly code?: string;
}

/** Options of {@link dlqRedrive}. */
export interface DlqRedriveOptions {
  readonly dlqUrl: string;
  /** The source (worker) queue the messages go back to. */
  readonly queueUrl: string;
  readonly consumer: string;
  /** Never move more than this many messages. */
  readonly max: number;
  /** Messages per second. @default 5 */
  readonly ratePerSecond?: number;
  readonly filter?: RedriveFilter;
  /** Report what would move; send and delete nothing. */
  readonly dryRun?: boolean;
  /** Long-poll wait of each receive. @default 1 */
  readonly waitSeconds?: number;
  /** Who runs it, for the audit trail (`ops_audit`). @default SQS_WORKER_ACTOR or the OS user */
  readonly actor?: string;
  /**
   * Re-arm the inbox row of each moved key (FAILED_TERMINAL/FAILED_RETRYABLE → FAILED_RETRYABLE with a fresh
   * attempt budget, see `rearmInbox`) so the fixed worker processes it instead of repeating the terminal
   * outcome. COMPLETED rows are never touched. @default true
   */
  readonly rearm?: boolean;
  /**
   * Moves only messages this also accepts (besides `filter`); the others are held and made visible again like
   * non-matching ones. The canary redrive passes one that keeps messages it cannot follow, or sent already, in the DLQ.
   */
  readonly select?: (entry: DlqEntry) => boolean;
}

/** One message moved (or, in a dry run, that would move). */
export interface RedriveMove {
  readonly sqsMessageId: string;
  readonly newMessageId: string | null;
  readonly messageType: string;
  readonly idempotencyKey: string | null;
  readonly code: string;
  readonly auditId: string | null;
}

/** Result of {@link dlqRedrive}. */
export interface DlqRedriveResult {
  readonly dryRun: boolean;
  readonly moved: number;
  readonly moves: RedriveMove[];
  /** DLQ messages received that did not match the filter (or exceeded --max); made visible again. */
  readonly leftInDlq: number;
  readonly filter: RedriveFilter;
  readonly ratePerSecond: number;
}

/**
 * Parses `--filter messageType=X` / `--filter code=Y` (repeatable; all must match).
 *
 * @throws UsageError naming the bad filter and the accepted forms.
 */
export function parseRedriveFilters(values: readonly string[]): RedriveFilter {
  const filter: { messageType?: string; code?: string } = {};
  for (const value of values) {
    const match = /^(messageType|code)=(.+)$/.exec(value.trim());
    if (!match) {
      throw new UsageError(`--filter must be messageType=<type> or code=<failure code> (given "${value}")`);
    }
    filter[match[1] as 'messageType' | 'code'] = match[2] as string;
  }
  return filter;
}

const matches = (entry: DlqEntry, filter: RedriveFilter) =>
  (filter.messageType === undefined || entry.messageType === filter.messageType) &&
  (filter.code === undefined || entry.code === filter.code);

/**
 * `dlq redrive`: moves at most `max` messages from the DLQ back to the source queue, at most `ratePerSecond`.
 *
 * For each message: an audit row (STARTED) → SendMessage to the source queue with the same body and
 * message attributes (for FIFO the same MessageGroupId and a fresh MessageDeduplicationId
 * `<original>-redrive-<auditId>`: reusing the original id inside SQS's 5-minute deduplication window would
 * make SQS drop the message) → the inbox entry re-armed, kept only when the send succeeded
 * ({@link DlqInbox.rearmAround}) → DeleteMessage from the DLQ → the audit row DONE with the new message id. A message
 * that does not match the filter is held while the run lasts (so it is not read twice) and made visible again at the
 * end. A store without a DLQ inbox ({@link OpsStore.dlqInbox}) refuses before anything is received.
 *
 * A redriven message whose key the inbox already COMPLETED is a duplicate no-op for the worker, so
 * redriving twice is safe; the pattern document still says: redrive a few first, not everything.
 *
 * @throws OperationError (exit 1) when a send or delete fails; the moves done so far stay done and audited.
 * @example
 * ```ts
 * await dlqRedrive({ store, sqs, out, clock: systemClock }, { dlqUrl, queueUrl, consumer: 'case-worker', max: 3 });
 * ```
 */
export async function dlqRedrive(
  deps: { store: OpsStore; sqs: SqsSender; out: OpsOutput; clock: Clock },
  options: DlqRedriveOptions,
): Promise<DlqRedriveResult> {
  const { sqs, out, clock } = deps;
  const inbox = deps.store.dlqInbox('dlq redrive');
  const rate = options.ratePerSecond ?? 5;
  const filter = options.filter ?? {};
  const dryRun = options.dryRun === true;
  const actor = options.actor ?? currentActor();
  const fifo = options.queueUrl.endsWith('.fifo');
  // Long enough that nothing held reappears before the run ends at the given rate.
  const holdSeconds = Math.min(43_200, Math.max(60, Math.ceil(options.max / rate) + 60));
  const interval = 1000 / rate;

  const moves: RedriveMove[] = [];
  const held: Message[] = [];
  let nextSendAt = clock.now().getTime();
  const progress = out.progress(options.max, dryRun ? 'dry run' : 'redrive');
  try {
    while (moves.length < options.max) {
      const batch = await receiveBatch(sqs, options.dlqUrl, {
        max: options.max - moves.length,
        visibilitySeconds: holdSeconds,
        waitSeconds: options.waitSeconds ?? 1,
      });
      if (batch.length === 0) break;
      const entries = await inspectDlqMessages(inbox, options.consumer, batch);
      for (const [index, message] of batch.entries()) {
        const entry = entries[index] as DlqEntry;
        if (moves.length >= options.max || !matches(entry, filter) || options.select?.(entry) === false) {
          held.push(message);
          continue;
        }
        const base = {
          sqsMessageId: entry.sqsMessageId,
          messageType: entry.messageType,
          idempotencyKey: entry.decoded.idempotencyKey ?? null,
          code: entry.code,
        };
        if (dryRun) {
          held.push(message);
          moves.push({ ...base, newMessageId: null, auditId: null });
          progress.increment();
          continue;
        }
        const wait = nextSendAt - clock.now().getTime();
        if (wait > 0) await clock.sleep(wait);
        nextSendAt = Math.max(nextSendAt, clock.now().getTime()) + interval;
        moves.push(await moveOne({ inbox, sqs }, options, { message, entry, fifo, actor, held, base }));
        progress.increment();
      }
    }
  } finally {
    progress.stop();
    await releaseMessages(sqs, options.dlqUrl, held);
  }
  const result: DlqRedriveResult = {
    dryRun,
    moved: moves.length,
    moves,
    leftInDlq: held.length - (dryRun ? moves.length : 0),
    filter,
    ratePerSecond: rate,
  };
  emit(out, result, () => renderRedrive(result, options));
  return result;
}

function renderRedrive(result: DlqRedriveResult, options: DlqRedriveOptions): string {
  const { dryRun, moves, ratePerSecond: rate } = result;
  return [
    dryRun
      ? `Dry run: ${moves.length} message(s) would move from ${options.dlqUrl} to ${options.queueUrl}; nothing was sent or deleted.`
      : `Moved ${moves.length} message(s) from ${options.dlqUrl} to ${options.queueUrl} at ≤ ${rate}/s.`,
    moves.length > 0
      ? table(
          ['sqs message id', 'new message id', 'messageType', 'idempotency key', 'code'],
          moves.map((m) => [m.sqsMessageId, m.newMessageId, m.messageType, m.idempotencyKey, m.code]),
        )
      : '',
    result.leftInDlq > 0
      ? `${result.leftInDlq} other message(s) received did not match or exceeded --max; left in the DLQ.`
      : '',
    dryRun ? '' : 'Next: watch "sqs-worker inbox stats" and "sqs-worker queue status" before redriving more.',
  ]
    .filter(Boolean)
    .join('\n');
}

/** One message to move, with what the run keeps of it. */
interface MoveItem {
  readonly message: Message;
  readonly entry: DlqEntry;
  readonly fifo: boolean;
  readonly actor: string;
  /** The messages made visible again at the end of the run; a message that does not move joins them. */
  readonly held: Message[];
  readonly base: Omit<RedriveMove, 'newMessageId' | 'auditId'>;
}

/** Audit STARTED → send (re-arming the inbox entry around it) → delete from the DLQ → audit DONE. */
async function moveOne(
  deps: { inbox: DlqInbox; sqs: SqsSender },
  options: DlqRedriveOptions,
  item: MoveItem,
): Promise<RedriveMove> {
  const { inbox, sqs } = deps;
  const { message, entry, fifo, actor, held, base } = item;
  const input = sendInput(options, item);
  const key = entry.decoded.idempotencyKey;
  const rearmKey = options.rearm !== false && key && entry.decoded.valid ? key : undefined;
  const auditId = await inbox.audit.record(
    {
      action: 'dlq_redrive',
      outcome: 'STARTED',
      consumer: options.consumer,
      sourceQueue: options.dlqUrl,
      targetQueue: options.queueUrl,
      sqsMessageId: entry.sqsMessageId,
      idempotencyKey: entry.decoded.idempotencyKey,
      messageType: entry.decoded.messageType,
      detail: {
        code: entry.code,
        inboxStatus: entry.inboxStatus,
        inboxAttempts: entry.inboxAttempts,
        receiveCount: entry.receiveCount,
        filter: options.filter ?? {},
      },
    },
    actor,
  );
  if (fifo) {
    // A fresh deduplication id: the message may have reached the DLQ within SQS's 5-minute deduplication
    // window of its original id, and SQS would accept a send with that id but drop the message. The inbox
    // idempotency key, not the SQS id, is what makes a second copy harmless.
    input.MessageDeduplicationId = redriveDeduplicationId(
      message.Attributes?.MessageDeduplicationId ?? entry.sqsMessageId,
      auditId,
    );
  }
  let newMessageId: string | undefined;
  let sent = false;
  let rearmed = false;
  const send = async () => {
    newMessageId = (await sqs.send(new SendMessageCommand(input))).MessageId;
    sent = true;
  };
  try {
    if (rearmKey) {
      rearmed = await inbox.rearmAround({ consumer: options.consumer, idempotencyKey: rearmKey }, send);
    } else {
      await send();
    }
  } catch (error) {
    held.push(message);
    throw await sendFailure(inbox, options, { auditId, entry, error, sent, newMessageId, rearmKey });
  }
  try {
    await sqs.send(
      new DeleteMessageCommand({ QueueUrl: options.dlqUrl, ReceiptHandle: message.ReceiptHandle }),
    );
  } catch (error) {
    await inbox.audit.finish(auditId, {
      outcome: 'FAILED',
      newMessageId,
      detail: { error: `delete: ${(error as Error).name}`, rearmed },
    });
    throw new OperationError(
      `DLQ message ${entry.sqsMessageId} was sent to the source queue as ${newMessageId} but could not be deleted ` +
        `from the DLQ: ${(error as Error).message}. The copy left in the DLQ is a duplicate: the inbox makes it a ` +
        'no-op if redriven again, or delete it after checking "inbox show".',
      { cause: error },
    );
  }
  await inbox.audit.finish(auditId, { outcome: 'DONE', newMessageId, detail: { rearmed } });
  return { ...base, newMessageId: newMessageId ?? null, auditId };
}

/** The SendMessage input: body, message attributes and trace header as received; for FIFO the group id. */
function sendInput(options: DlqRedriveOptions, item: MoveItem): SendMessageCommandInput {
  const { message, entry, fifo, held } = item;
  const input: SendMessageCommandInput = {
    QueueUrl: options.queueUrl,
    MessageBody: message.Body ?? '',
    MessageAttributes: toSendAttributes(message.MessageAttributes),
  };
  const traceHeader = message.Attributes?.AWSTraceHeader;
  if (traceHeader)
    input.MessageSystemAttributes = { AWSTraceHeader: { DataType: 'String', StringValue: traceHeader } };
  if (fifo) {
    input.MessageGroupId = message.Attributes?.MessageGroupId;
    if (!input.MessageGroupId) {
      held.push(message);
      throw new OperationError(
        `DLQ message ${entry.sqsMessageId} has no MessageGroupId but the source queue ${options.queueUrl} is FIFO; ` +
          'redrive it from a FIFO DLQ or move it by hand.',
      );
    }
  }
  return input;
}

/** Completes the audit row of a move whose send or re-arm failed, and returns the error that says which. */
async function sendFailure(
  inbox: DlqInbox,
  options: DlqRedriveOptions,
  failed: {
    auditId: string;
    entry: DlqEntry;
    error: unknown;
    sent: boolean;
    newMessageId: string | undefined;
    rearmKey: string | undefined;
  },
): Promise<OperationError> {
  const { auditId, entry, error, newMessageId } = failed;
  if (!failed.sent) {
    await inbox.audit.finish(auditId, {
      outcome: 'FAILED',
      detail: { error: `send: ${(error as Error).name}`, rearmed: false },
    });
    return new OperationError(
      `SendMessage to ${options.queueUrl} failed for DLQ message ${entry.sqsMessageId}: ${(error as Error).message}. ` +
        'It stays in the DLQ and its inbox row is unchanged. Check the queue URL and sqs:SendMessage permission, ' +
        'then run the redrive again.',
      { cause: error },
    );
  }
  await inbox.audit
    .finish(auditId, {
      outcome: 'FAILED',
      newMessageId,
      detail: { error: `rearm: ${(error as Error).name}`, rearmed: false },
    })
    .catch(() => {});
  return new OperationError(
    `DLQ message ${entry.sqsMessageId} was sent to the source queue as ${newMessageId} but re-arming inbox key ` +
      `"${failed.rearmKey}" did not commit: ${(error as Error).message}. The DLQ copy stays; the worker may repeat the ` +
      'terminal outcome for the sent copy. Check the database, then run the redrive again.',
    { cause: error },
  );
}

/** SQS's limit on a MessageDeduplicationId. */
const MAX_DEDUPLICATION_ID = 128;

/** `<original>-redrive-<auditId>`, the original shortened so the id stays within SQS's 128 characters. */
function redriveDeduplicationId(original: string, auditId: string): string {
  const suffix = `-redrive-${auditId}`;
  return `${original.slice(0, MAX_DEDUPLICATION_ID - suffix.length)}${suffix}`;
}
