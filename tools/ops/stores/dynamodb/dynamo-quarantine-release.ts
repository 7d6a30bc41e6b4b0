import type { SendMessageCommandInput } from '@aws-sdk/client-sqs';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { Clock } from '../../clock.ts';
import { systemClock } from '../../clock.ts';
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
import { dynamoAuditItem } from './dynamo-audit-item.ts';
import { ANY_AGGREGATE_TYPE, findDynamoNewerCompletedEvents } from './dynamo-newer-completed-events.ts';
import type { DynamoOpsTarget } from './dynamo-ops-table.ts';
import type { DynamoQuarantineEntry } from './dynamo-quarantine-entry.ts';
import { loadDynamoQuarantineEntry } from './dynamo-quarantine-show.ts';
import {
  claimForRelease,
  type HeldRelease,
  markReleased,
  readInbox,
  undoClaim,
} from './dynamo-release-claim.ts';

/*
 * A release on a timeline (one quarantine item; DynamoDB has no row lock to hold across the send):
 *
 *   read the item (consistent) ─► refuse: released, hash mismatch, body cut or attributes dropped, claimed, newer
 *                                  events without --force
 *   transaction 1: claim the item (releaseClaim = token, until now + 2 min; condition: not released, not claimed or
 *                  claim expired, lastQuarantinedAt unchanged) + re-arm the inbox item (condition: unchanged)
 *   SendMessage ─► fails: transaction undoing both (conditioned on the token), "nothing was sent"
 *   transaction 2: releasedAt, releasedMessageId, REMOVE releaseClaim (condition: our token, lastQuarantinedAt
 *                  unchanged) + the audit item
 *
 * Two operators: one claim wins, the other is refused before sending. A release that dies after the send leaves the
 * claim to expire; releasing again re-sends, and the inbox makes the second copy a no-op (as on PostgreSQL when the
 * commit fails after the send). The two transactions and the undo are in dynamo-release-claim.ts.
 */

/**
 * `quarantine release <id>` on the DynamoDB store, as on PostgreSQL: after a fix is deployed, re-sends the stored
 * body and message attributes to the source queue (for a FIFO queue with its MessageGroupId and a deduplication id
 * from the body hash and occurrences), re-arms the inbox item of its key (FAILED_TERMINAL or FAILED_RETRYABLE →
 * FAILED_RETRYABLE with `attempts` 0, so the worker processes it with a fresh attempt budget instead of repeating the
 * terminal outcome) and marks the item `releasedAt` / `releasedMessageId` with an audit item in the same
 * transaction. The item is claimed (a conditional write) before the send, so two operators cannot both send it; a
 * failed send undoes the claim and the re-arm.
 *
 * Refuses, sending nothing and changing nothing: an item already released or being released, an
 * IDEMPOTENCY_HASH_MISMATCH, a body the store cut at 300 KiB or message attributes it dropped to fit the item in
 * 400 KB (it is not the message any more), a FIFO queue without the message's group id, and — without `force` — a message of an aggregate id with newer COMPLETED inbox items
 * ({@link findDynamoNewerCompletedEvents}: matched by the aggregate's type and id).
 *
 * With `edit` (`--edit <file>`), as on PostgreSQL: the validated, corrected body is sent under the next version of the
 * key (`<key>:v2`, …: the first without an inbox item), the inbox item of the original key is left as it is, the item
 * records `releasedAsKey`, and the audit item links both keys with the sha256 of both bodies. A body the store cut is
 * no refusal then (the edit replaces it).
 *
 * @throws OperationError (exit 1) for the refusals above, an unknown id, or a failed send or write.
 * @throws OutOfOrderReleaseError (exit 1) when newer events of its aggregate completed and `force` is not set.
 * @example
 * ```ts
 * await dynamoQuarantineRelease(
 *   { dynamo: { doc, tableName: 'sqs-worker' }, sqs, out },
 *   { quarantineId: bodyHash, queueUrl, consumer: 'case-worker' },
 * );
 * ```
 */
export async function dynamoQuarantineRelease(
  deps: { dynamo: DynamoOpsTarget; sqs: SqsSender; out: OpsOutput; clock?: Clock },
  options: QuarantineReleaseOptions,
): Promise<QuarantineReleaseResult> {
  const { dynamo, sqs, out } = deps;
  const clock = deps.clock ?? systemClock;
  const actor = options.actor ?? currentActor();
  const forced = options.force === true;
  const entry = await loadDynamoQuarantineEntry(dynamo, options.consumer, options.quarantineId);
  const id = entry.quarantineId;
  refuseUnreleasable(entry, clock.now(), options.edit !== undefined);
  const edit = options.edit ? await planEdit(dynamo, entry, options.edit, options.forceEdit) : undefined;
  const newer = await findDynamoNewerCompletedEvents(dynamo, entry);
  if (newer.count > 0 && !forced)
    throw new OutOfOrderReleaseError(outOfOrderMessage(entry, newer), id, newer);
  const input = releaseSendInput(edit ? { ...entry, body: edit.body } : entry, options.queueUrl, () => {
    const dropped = entry.sqsAttributesDropped.includes('MessageGroupId')
      ? ' (the store did not keep it: the item would not have fit 400 KB)'
      : '';
    return `Quarantine item ${entry.quarantineId} has no MessageGroupId${dropped} but ${options.queueUrl} is a FIFO queue; nothing was sent. Send it by hand with its group id.`;
  });

  const inbox =
    entry.idempotencyKey && !edit ? await readInbox(dynamo, entry.consumer, entry.idempotencyKey) : null;
  // As on PostgreSQL: failed items get a fresh start; COMPLETED and PROCESSING ones are left alone, and so is a key
  // that failed with a hash mismatch (it belongs to another request).
  const rearm =
    inbox !== null &&
    (inbox.status === 'FAILED_TERMINAL' || inbox.status === 'FAILED_RETRYABLE') &&
    inbox.failureCode !== 'IDEMPOTENCY_HASH_MISMATCH';
  const held = await claimForRelease(dynamo, { entry, rearm: rearm ? inbox : null, actor, now: clock.now() });
  const releasedMessageId = await send(dynamo, sqs, held, input);

  const at = clock.now();
  const audit = dynamoAuditItem(
    {
      action: 'quarantine_release',
      outcome: 'DONE',
      consumer: entry.consumer,
      targetQueue: options.queueUrl,
      newMessageId: releasedMessageId,
      ...(entry.sqsMessageId ? { sqsMessageId: entry.sqsMessageId } : {}),
      ...(entry.idempotencyKey ? { idempotencyKey: entry.idempotencyKey } : {}),
      ...(entry.messageType ? { messageType: entry.messageType } : {}),
      detail: {
        quarantineId: id,
        reasonCode: entry.reasonCode,
        inboxStatusBefore: inbox?.status ?? null,
        inboxRearmed: rearm,
        forced,
        newerCompletedEvents: newer.count,
        ...(edit ? editAuditDetail(edit) : {}),
      },
    },
    actor,
    at,
  );
  try {
    const releasedAsKey = edit?.releasedAsKey;
    await markReleased(dynamo, held, { at, releasedMessageId, actor, auditItem: audit.item, releasedAsKey });
  } catch (error) {
    await undoClaim(dynamo, held, { restoreInbox: false });
    throw new OperationError(
      `Quarantine item ${id} was sent to ${options.queueUrl} as message ${releasedMessageId} but not marked released: ` +
        `${(error as Error).message}. It was quarantined again meanwhile or its claim ran out (a copy of the message ` +
        `was being processed). Check "sqs-worker quarantine show ${id} --store dynamodb"; releasing again is safe, the ` +
        'inbox makes a second copy a no-op.',
      { cause: error },
    );
  }
  const result: QuarantineReleaseResult = {
    quarantineId: id,
    idempotencyKey: entry.idempotencyKey,
    messageType: entry.messageType,
    releasedMessageId,
    queueUrl: options.queueUrl,
    inboxStatusBefore: inbox?.status ?? null,
    inboxRearmed: rearm,
    aggregate: newer.aggregate,
    newerCompletedEvents: newer.count,
    forced,
    auditId: audit.auditId,
    ...(edit ? { edit: editResult(edit) } : {}),
  };
  emit(out, result, () => renderRelease(result));
  return result;
}

/** Sends the claimed item; a failed send undoes the claim and the inbox re-arm ("nothing was sent"). */
async function send(
  dynamo: DynamoOpsTarget,
  sqs: SqsSender,
  held: HeldRelease,
  input: SendMessageCommandInput,
): Promise<string> {
  try {
    return (await sqs.send(new SendMessageCommand(input))).MessageId ?? '';
  } catch (error) {
    const undone = await undoClaim(dynamo, held, { restoreInbox: true });
    throw new OperationError(
      `SendMessage to ${input.QueueUrl} failed for quarantine item ${held.entry.quarantineId}: ${(error as Error).message}. Nothing was sent; ` +
        (undone
          ? 'the claim and the inbox re-arm were undone. '
          : `undoing the claim failed too: it ends at ${new Date(held.claim.expiresAt).toISOString()}, release again after that. `) +
        'Check the queue URL and sqs:SendMessage permission.',
      { cause: error },
    );
  }
}

function renderRelease(result: QuarantineReleaseResult): string {
  const id = result.quarantineId;
  return [
    `Released quarantine item ${id} (${result.messageType ?? 'unknown type'}, key ${result.idempotencyKey ?? '-'}) ` +
      `to ${result.queueUrl} as message ${result.releasedMessageId}.`,
    ...(result.edit
      ? []
      : [
          result.inboxRearmed
            ? `Inbox item re-armed (was ${result.inboxStatusBefore}): the worker will process it again.`
            : `Inbox item: ${result.inboxStatusBefore ?? 'none'} (unchanged).`,
        ]),
    ...(result.newerCompletedEvents > 0
      ? [
          `Forced: ${result.newerCompletedEvents} newer event(s) of aggregate id "${result.aggregate?.id}" had ` +
            'completed; this older event is applied after them. Check the aggregate afterwards.',
        ]
      : []),
    ...(result.aggregate === null
      ? ['Not checked for newer events: neither the body nor an inbox item names its aggregate.']
      : []),
    ...(result.edit
      ? [
          `Edited: sent under the new key ${result.edit.releasedAsKey} (body sha256 ${result.edit.editedBodyHash.slice(0, 12)}…, ` +
            `original ${result.edit.originalBodyHash.slice(0, 12)}…); the original key's inbox item is unchanged.`,
        ]
      : []),
    `Follow it with "sqs-worker inbox show ${result.edit?.releasedAsKey ?? result.idempotencyKey ?? '<key>'} --store dynamodb".`,
  ].join('\n');
}

/** The edited body of an item and the key it goes out as: the next version of the key without an inbox item. */
async function planEdit(
  dynamo: DynamoOpsTarget,
  entry: DynamoQuarantineEntry,
  edit: EditedBodyInput,
  forceEdit: boolean | undefined,
): Promise<EditedRelease> {
  const key = await nextVersionedKey(
    editedKeyBase(entry.idempotencyKey, edit),
    async (candidate) => (await readInbox(dynamo, entry.consumer, candidate)) !== null,
  );
  return editedRelease(entry, edit, key, { forceEdit });
}

/** The refusals that need nothing but the item (an edited release replaces the body: a cut one is no refusal). */
function refuseUnreleasable(entry: DynamoQuarantineEntry, now: Date, edited: boolean): void {
  const id = entry.quarantineId;
  if (entry.releasedAt) {
    throw new OperationError(
      `Quarantine item ${id} was already released at ${entry.releasedAt.toISOString()} as message ` +
        `${entry.releasedMessageId}. If it failed again, the worker quarantines it again and it becomes releasable.`,
    );
  }
  if (entry.releaseClaim && entry.releaseClaim.expiresAt > now.getTime()) {
    throw new OperationError(
      `Quarantine item ${id} is being released by ${entry.releaseClaim.actor} since ${entry.releaseClaim.at}; nothing ` +
        `was sent. If that command died, release again after ${new Date(entry.releaseClaim.expiresAt).toISOString()}.`,
    );
  }
  if (entry.reasonCode === 'CANCELLED' && !edited) {
    throw new OperationError(
      `Quarantine item ${id} is a copy of cancelled key "${entry.idempotencyKey}"; re-sending it would be ` +
        'quarantined again. To apply a corrected message, release it under a new key: ' +
        `"sqs-worker quarantine release ${id} --store dynamodb --edit <file.json>".`,
    );
  }
  if (entry.reasonCode === 'IDEMPOTENCY_HASH_MISMATCH' && !edited) {
    throw new OperationError(
      `Quarantine item ${id} reused idempotency key "${entry.idempotencyKey}" for a different request; ` +
        'releasing it would be rejected again. Have the producer publish it with its own idempotency key.',
    );
  }
  if (entry.bodyTruncated && !edited) {
    throw new OperationError(
      `Quarantine item ${id} keeps only the first 300 KiB of its body (the message was larger than a DynamoDB item ` +
        'holds), so re-sending it would send a different, broken message; nothing was sent. Have the producer ' +
        'publish it again, or send the whole message by hand.',
    );
  }
  if (entry.messageAttributesDropped.length > 0) {
    throw new OperationError(
      `Quarantine item ${id} does not keep its message attributes ${entry.messageAttributesDropped.join(', ')} (with ` +
        "them the item would not have fit DynamoDB's 400 KB), so re-sending it would send a different message; " +
        'nothing was sent. Have the producer publish it again, or send the whole message by hand.',
    );
  }
}

/** The refusal text: what was found (metadata only), the risk, what the DynamoDB match means, how to go ahead. */
function outOfOrderMessage(entry: DynamoQuarantineEntry, newer: NewerCompletedEvents): string {
  const lines = newer.events.map(
    (event) =>
      `  - ${event.messageType} (key ${event.idempotencyKey}) completed at ${event.completedAt.toISOString()}`,
  );
  if (newer.count > newer.events.length) lines.push(`  - and ${newer.count - newer.events.length} more`);
  const of =
    newer.aggregate?.type === ANY_AGGREGATE_TYPE
      ? `aggregate id "${newer.aggregate?.id}"`
      : `${newer.aggregate?.type} "${newer.aggregate?.id}"`;
  return [
    `Quarantine item ${entry.quarantineId} (${entry.messageType ?? 'unknown type'}, key ${entry.idempotencyKey ?? '-'}) ` +
      `was not released: ${newer.count} newer event(s) of ${of} completed for this consumer after it was first seen ` +
      `at ${newer.since.toISOString()}:`,
    ...lines,
    'Releasing it applies this older event after them (a standard queue does not keep order), which may roll ' +
      'the state of that aggregate back unless its handler guards by version. Nothing was sent or changed.',
    'DynamoDB inbox items keep the aggregate id but not its type: events of another aggregate type with the same id ' +
      'are listed too; check their message types.',
    `Check that the ${entry.messageType ?? 'message'} handler guards by version, or that applying it now is still ` +
      `right for the aggregate, then re-run with --force: "sqs-worker quarantine release ${entry.quarantineId} ` +
      '--store dynamodb --force".',
  ].join('\n');
}
