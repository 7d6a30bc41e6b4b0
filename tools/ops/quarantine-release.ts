import type { SendMessageCommandInput } from '@aws-sdk/client-sqs';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type postgres from 'postgres';
import type { SqsSender } from './collaborators.ts';
import { OperationError } from './errors.ts';
import type { OpsOutput } from './output.ts';
import { emit } from './output.ts';
import { loadQuarantineEntry } from './quarantine-show.ts';
import { rearmInbox } from './rearm-inbox.ts';
import { currentActor, recordAudit } from './record-audit.ts';
import { toSendAttributes } from './to-send-attributes.ts';

/** Result of {@link quarantineRelease}. */
export interface QuarantineReleaseResult {
  readonly quarantineId: string;
  readonly idempotencyKey: string | null;
  readonly messageType: string | null;
  readonly releasedMessageId: string;
  readonly queueUrl: string;
  /** Inbox status before the release (null: no row), and whether it was re-armed. */
  readonly inboxStatusBefore: string | null;
  readonly inboxRearmed: boolean;
  readonly auditId: string;
}

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
 * @throws OperationError (exit 1) when the entry does not exist, was already released, belongs to another
 *   consumer, failed with an idempotency hash mismatch, or the send fails.
 */
export async function quarantineRelease(
  deps: { sql: postgres.Sql; sqs: SqsSender; out: OpsOutput },
  options: { quarantineId: string; queueUrl: string; consumer: string; actor?: string },
): Promise<QuarantineReleaseResult> {
  const { sql, sqs, out } = deps;
  const actor = options.actor ?? currentActor();
  const result = await sql.begin(async (tx) => {
    const entry = await loadQuarantineEntry(tx, options.quarantineId, { forUpdate: true });
    if (entry.releasedAt) {
      throw new OperationError(
        `Quarantine entry ${entry.quarantineId} was already released at ${entry.releasedAt.toISOString()} as message ` +
          `${entry.releasedMessageId}. If it failed again, the worker quarantines it again and it becomes releasable.`,
      );
    }
    if (entry.consumer !== options.consumer) {
      throw new OperationError(
        `Quarantine entry ${entry.quarantineId} belongs to consumer "${entry.consumer}", not "${options.consumer}". ` +
          'Pass --consumer / WORKER_CONSUMER and --queue-url of that worker.',
      );
    }
    if (entry.reasonCode === 'IDEMPOTENCY_HASH_MISMATCH') {
      throw new OperationError(
        `Quarantine entry ${entry.quarantineId} reused idempotency key "${entry.idempotencyKey}" for a different request; ` +
          'releasing it would be rejected again. Have the producer publish it with its own idempotency key.',
      );
    }
    const rearm = entry.idempotencyKey
      ? await rearmInbox(tx, { consumer: entry.consumer, idempotencyKey: entry.idempotencyKey })
      : { previousStatus: null, rearmed: false };
    const input: SendMessageCommandInput = {
      QueueUrl: options.queueUrl,
      MessageBody: entry.body,
      MessageAttributes: toSendAttributes(entry.messageAttributes),
    };
    if (options.queueUrl.endsWith('.fifo')) {
      const groupId = (entry.sqsAttributes as { MessageGroupId?: string }).MessageGroupId;
      if (!groupId) {
        throw new OperationError(
          `Quarantine entry ${entry.quarantineId} has no MessageGroupId but ${options.queueUrl} is a FIFO queue; send it by hand.`,
        );
      }
      input.MessageGroupId = groupId;
      input.MessageDeduplicationId = `quarantine-${entry.quarantineId}-${entry.occurrences}`;
    }
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
      update worker_quarantine set released_at = now(), released_message_id = ${releasedMessageId}
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
      auditId,
    } satisfies QuarantineReleaseResult;
  });
  emit(out, result, () =>
    [
      `Released quarantine entry ${result.quarantineId} (${result.messageType ?? 'unknown type'}, key ${result.idempotencyKey ?? '-'}) ` +
        `to ${result.queueUrl} as message ${result.releasedMessageId}.`,
      result.inboxRearmed
        ? `Inbox row re-armed (was ${result.inboxStatusBefore}): the worker will process it again.`
        : `Inbox row: ${result.inboxStatusBefore ?? 'none'} (unchanged).`,
      `Follow it with "sqs-worker inbox show ${result.idempotencyKey ?? '<key>'}".`,
    ].join('\n'),
  );
  return result;
}
