import pLimit from 'p-limit';
import type postgres from 'postgres';
import { msUntilDue } from '../../worker/attempt-policy.ts';
import type { CommitBatch } from '../../worker/commit-strategy.ts';
import { CLIENT_DEADLINE_MARGIN_MS, HANDLER_MARGIN_MS } from '../../worker/deadline-margins.ts';
import { type PayloadReader, type ResolvedPayload, resolvePayload } from '../../worker/resolve-payload.ts';
import { withinDeadline } from '../../worker/within-deadline.ts';
import { isInboxCompleted } from './inbox.ts';

/**
 * Per-batch mode: reads the referenced payloads of the batch's due records before the batch transaction opens (no
 * connection is held while S3 answers), four at a time, by SQS messageId. A duplicate of a completed message is not
 * read again; when that lookup fails the object is read anyway, so every read happens here. The reads leave the
 * records time to start (the deadline guard) and to settle: a read that timed out is then counted as an attempt,
 * not deferred unread again and again.
 *
 * @internal
 */
export async function readBatchPayloads(
  sql: postgres.Sql,
  batch: CommitBatch,
  input: {
    consumer: string;
    payloads: PayloadReader;
    now: () => number;
    abandon: (waitedMs: number) => Error;
  },
): Promise<ReadonlyMap<string, ResolvedPayload>> {
  const resolved = new Map<string, ResolvedPayload>();
  const reads = pLimit(4);
  await Promise.all(
    batch.records.map(({ record, decoded: d }) =>
      d.ok && d.pendingRef && msUntilDue(d.envelope.attemptPolicy, input.now()) <= 0
        ? reads(async () => {
            const key = { consumer: input.consumer, idempotencyKey: d.envelope.idempotencyKey };
            const duplicate = await withinDeadline(
              isInboxCompleted(sql, { ...key, requestHash: d.requestHash }),
              batch.state.remainingMs() - CLIENT_DEADLINE_MARGIN_MS,
              input.abandon,
            ).catch(() => false);
            const readBudgetMs = batch.state.remainingMs() - 2 * HANDLER_MARGIN_MS - batch.guardMs();
            resolved.set(
              record.messageId,
              duplicate ? { ok: true, decoded: d } : await resolvePayload(d, input.payloads, readBudgetMs),
            );
          })
        : undefined,
    ),
  );
  return resolved;
}
