import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type postgres from 'postgres';
import type { SqsSender } from '../../collaborators.ts';
import { currentActor } from '../../current-actor.ts';
import {
  type EditedBodyInput,
  type EditedRelease,
  editAuditDetail,
  editedKeyBase,
  editedRelease,
  editResult,
  nextVersionedKey,
} from '../../edited-release.ts';
import { OperationError, OutOfOrderReleaseError } from '../../errors.ts';
import type { NewerCompletedEvents } from '../../newer-completed-events.ts';
import type { QuarantineReleaseOptions } from '../../ops-store.ts';
import type { OpsOutput } from '../../output.ts';
import { emit } from '../../output.ts';
import type { QuarantineReleaseResult } from '../../quarantine-release-result.ts';
import { releaseSendInput } from '../../release-send-input.ts';
import type { QuarantineEntry } from '../../render-quarantine-entry.ts';
import { findNewerCompletedEvents } from './find-newer-completed-events.ts';
import { loadQuarantineEntry } from './quarantine-show.ts';
import { rearmInbox } from './rearm-inbox.ts';
import { recordAudit } from './record-audit.ts';

/**
 * `quarantine release <id>`: after a fix is deployed, re-sends a quarantined message to the source queue
 * (the stored body and message attributes; for a FIFO queue its MessageGroupId and a deduplication id
 * derived from the quarantine id) and marks it `released_at` / `released_message_id`, audited.
 *
 * The inbox row of its key is re-armed first (FAILED_TERMINAL → FAILED_RETRYABLE, fresh attempt budget):
 * without that the worker would repeat the terminal outcome. Runs in one transaction holding the
 * quarantine row, so two operators cannot release the same entry twice; if the commit fails after the send,
 * the message was sent but not marked — releasing again is safe, the inbox makes a second copy a no-op.
 *
 * Releasing re-sends an OLD event: if the consumer completed newer events of the same aggregate since the
 * message was first seen (a deadline request quarantined because its case did not exist yet, the case then
 * moved on), the old event is applied after them, which rolls the aggregate's state back unless its handler
 * guards by version. Without `force` such a release changes nothing, sends nothing and throws
 * {@link OutOfOrderReleaseError} listing them; with `force` it goes ahead and the audit detail records
 * `forced` and the number of newer events.
 *
 * With `edit` (`--edit <file>`) the corrected body of the file is sent instead, under a NEW version of the key
 * ({@link nextVersionedKey}: `<key>:v2`, then `:v3`, …), after {@link editedRelease} validated it: the original key
 * stays bound to its request (the request-hash check keeps it safe, its inbox row is left as it is), the entry keeps its
 * body and records `released_as_key`, and the audit links the two keys with the sha256 of both bodies.
 *
 * @throws OperationError (exit 1) when the entry does not exist, was already released, belongs to another
 *   consumer, failed with an idempotency hash mismatch, or the send fails.
 * @throws OutOfOrderReleaseError (exit 1) when newer events of its aggregate completed and `force` is not set.
 * @example
 * ```ts
 * await quarantineRelease({ sql, sqs, out }, { quarantineId: '42', queueUrl, consumer: 'case-worker' });
 * ```
 */
export async function quarantineRelease(
  deps: { sql: postgres.Sql; sqs: SqsSender; out: OpsOutput },
  options: QuarantineReleaseOptions,
): Promise<QuarantineReleaseResult> {
  const { sql, sqs, out } = deps;
  const actor = options.actor ?? currentActor();
  const forced = options.force === true;
  const result = await sql.begin(async (tx) => {
    const entry = await loadQuarantineEntry(tx, options.quarantineId, { forUpdate: true });
    refuseUnreleasable(entry, options.consumer, options.edit !== undefined);
    const edit = options.edit ? await planEdit(tx, entry, options.edit, options.forceEdit) : undefined;
    const newer = await findNewerCompletedEvents(tx, entry);
    if (newer.count > 0 && !forced) {
      throw new OutOfOrderReleaseError(outOfOrderMessage(entry, newer), entry.quarantineId, newer);
    }
    const rearm =
      entry.idempotencyKey && !edit
        ? await rearmInbox(tx, { consumer: entry.consumer, idempotencyKey: entry.idempotencyKey })
        : { previousStatus: null, rearmed: false };
    const input = releaseSendInput(
      edit ? { ...entry, body: edit.body } : entry,
      options.queueUrl,
      () =>
        `Quarantine entry ${entry.quarantineId} has no MessageGroupId but ${options.queueUrl} is a FIFO queue; send it by hand.`,
    );
    let releasedMessageId: string;
    try {
      releasedMessageId = (await sqs.send(new SendMessageCommand(input))).MessageId ?? '';
    } catch (error) {
      throw new OperationError(
        `SendMessage to ${options.queueUrl} failed for quarantine entry ${entry.quarantineId}: ${(error as Error).message}. ` +
          'Nothing was changed; check the queue URL and sqs:SendMessage permission.',
        { cause: error },
      );
    }
    await tx`
      update worker_quarantine
      set released_at = now(), released_message_id = ${releasedMessageId}, released_as_key = ${edit?.releasedAsKey ?? null}
      where quarantine_id = ${entry.quarantineId}
    `;
    const auditId = await recordAudit(
      tx,
      {
        action: 'quarantine_release',
        outcome: 'DONE',
        consumer: entry.consumer,
        targetQueue: options.queueUrl,
        sqsMessageId: entry.sqsMessageId ?? undefined,
        newMessageId: releasedMessageId,
        idempotencyKey: entry.idempotencyKey ?? undefined,
        messageType: entry.messageType ?? undefined,
        detail: {
          quarantineId: entry.quarantineId,
          reasonCode: entry.reasonCode,
          inboxStatusBefore: rearm.previousStatus,
          inboxRearmed: rearm.rearmed,
          forced,
          newerCompletedEvents: newer.count,
          ...(edit ? editAuditDetail(edit) : {}),
        },
      },
      actor,
    );
    return {
      quarantineId: entry.quarantineId,
      idempotencyKey: entry.idempotencyKey,
      messageType: entry.messageType,
      releasedMessageId,
      queueUrl: options.queueUrl,
      inboxStatusBefore: rearm.previousStatus,
      inboxRearmed: rearm.rearmed,
      aggregate: newer.aggregate,
      newerCompletedEvents: newer.count,
      forced,
      auditId,
      ...(edit ? { edit: editResult(edit) } : {}),
    } satisfies QuarantineReleaseResult;
  });
  emit(out, result, () => renderRelease(result));
  return result;
}

/**
 * The edited body of an entry and the key it goes out as: the next free version of the key (no inbox row, no quarantine
 * entry, no earlier edited release uses it).
 */
async function planEdit(
  tx: postgres.TransactionSql,
  entry: QuarantineEntry,
  edit: EditedBodyInput,
  forceEdit: boolean | undefined,
): Promise<EditedRelease> {
  const key = await nextVersionedKey(editedKeyBase(entry.idempotencyKey, edit), async (candidate) => {
    const [used] = await tx`
      select 1 from worker_inbox where consumer = ${entry.consumer} and idempotency_key = ${candidate}
      union all
      select 1 from worker_quarantine
      where consumer = ${entry.consumer} and (idempotency_key = ${candidate} or released_as_key = ${candidate})
      limit 1
    `;
    return used !== undefined;
  });
  return editedRelease(entry, edit, key, { forceEdit });
}

/**
 * The refusals that need nothing but the entry: released already, another consumer's, a hash mismatch (unless edited:
 * the edit goes out under a key of its own), a cancelled key (unless edited).
 */
function refuseUnreleasable(entry: QuarantineEntry, consumer: string, edited: boolean): void {
  if (entry.releasedAt) {
    throw new OperationError(
      `Quarantine entry ${entry.quarantineId} was already released at ${entry.releasedAt.toISOString()} as message ` +
        `${entry.releasedMessageId}. If it failed again, the worker quarantines it again and it becomes releasable.`,
    );
  }
  if (entry.consumer !== consumer) {
    throw new OperationError(
      `Quarantine entry ${entry.quarantineId} belongs to consumer "${entry.consumer}", not "${consumer}". ` +
        'Pass --consumer / WORKER_CONSUMER and --queue-url of that worker.',
    );
  }
  if (entry.reasonCode === 'CANCELLED' && !edited) {
    throw new OperationError(
      `Quarantine entry ${entry.quarantineId} is a copy of cancelled key "${entry.idempotencyKey}"; re-sending it ` +
        'would be quarantined again. To apply a corrected message, release it under a new key: ' +
        `"sqs-worker quarantine release ${entry.quarantineId} --edit <file.json>".`,
    );
  }
  if (entry.reasonCode === 'IDEMPOTENCY_HASH_MISMATCH' && !edited) {
    throw new OperationError(
      `Quarantine entry ${entry.quarantineId} reused idempotency key "${entry.idempotencyKey}" for a different request; ` +
        'releasing it would be rejected again. Have the producer publish it with its own idempotency key.',
    );
  }
}

function renderRelease(result: QuarantineReleaseResult): string {
  return [
    `Released quarantine entry ${result.quarantineId} (${result.messageType ?? 'unknown type'}, key ${result.idempotencyKey ?? '-'}) ` +
      `to ${result.queueUrl} as message ${result.releasedMessageId}.`,
    ...(result.edit
      ? []
      : [
          result.inboxRearmed
            ? `Inbox row re-armed (was ${result.inboxStatusBefore}): the worker will process it again.`
            : `Inbox row: ${result.inboxStatusBefore ?? 'none'} (unchanged).`,
        ]),
    ...(result.newerCompletedEvents > 0
      ? [
          `Forced: ${result.newerCompletedEvents} newer event(s) of ${result.aggregate?.type} "${result.aggregate?.id}" ` +
            'had completed; this older event is applied after them. Check the aggregate afterwards.',
        ]
      : []),
    ...(result.aggregate === null
      ? ['Not checked for newer events: neither an inbox row nor the body names its aggregate.']
      : []),
    ...(result.edit
      ? [
          `Edited: sent under the new key ${result.edit.releasedAsKey} (body sha256 ${result.edit.editedBodyHash.slice(0, 12)}…, ` +
            `original ${result.edit.originalBodyHash.slice(0, 12)}…); the original key's inbox row is unchanged.`,
        ]
      : []),
    `Follow it with "sqs-worker inbox show ${result.edit?.releasedAsKey ?? result.idempotencyKey ?? '<key>'}".`,
  ].join('\n');
}

/** The refusal text: what was found (metadata only), the risk, and how to go ahead. */
function outOfOrderMessage(
  entry: { quarantineId: string; messageType: string | null; idempotencyKey: string | null },
  newer: NewerCompletedEvents,
): string {
  const lines = newer.events.map(
    (event) =>
      `  - ${event.messageType} (key ${event.idempotencyKey}) completed at ${event.completedAt.toISOString()}`,
  );
  if (newer.count > newer.events.length) lines.push(`  - and ${newer.count - newer.events.length} more`);
  return [
    `Quarantine entry ${entry.quarantineId} (${entry.messageType ?? 'unknown type'}, key ${entry.idempotencyKey ?? '-'}) ` +
      `was not released: ${newer.count} newer event(s) of ${newer.aggregate?.type} "${newer.aggregate?.id}" ` +
      `completed for this consumer after it was first seen at ${newer.since.toISOString()}:`,
    ...lines,
    'Releasing it applies this older event after them (a standard queue does not keep order), which may roll ' +
      'the state of that aggregate back unless its handler guards by version. Nothing was sent or changed.',
    `Check that the ${entry.messageType ?? 'message'} handler guards by version, or that applying it now is ` +
      `still right for the aggregate, then re-run with --force: "sqs-worker quarantine release ${entry.quarantineId} --force".`,
  ].join('\n');
}
