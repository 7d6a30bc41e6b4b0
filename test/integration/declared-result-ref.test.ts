import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { RetryableError } from '../../lambda/errors.ts';
import { defineHandler } from '../../lambda/stores/postgres/message-handler.ts';
import { createTestDatabase } from '../support/database.ts';
import { envelopeFactory, lambdaContext, sqsEvent, sqsRecordFactory } from '../support/sqs-event.ts';
import { exampleWorker } from '../support/test-worker.ts';

const db = await createTestDatabase();

/** Keys whose handler fails while they are listed (the row is then rolled back with the claim). */
const failing = new Set<string>();

/**
 * `Refs` v1 `{ id, returned? }`: writes a ledger row; declares `refs/<id>` up front, returns `returned` when
 * given; fails retryable while its key is in `failing`.
 */
const refs = defineHandler({
  messageType: 'Refs',
  schemaVersion: 1,
  payload: z.object({ id: z.string(), returned: z.optional(z.string()) }),
  resultRef: ({ payload }) => `refs/${payload.id}`,
  async handle({ sql, payload, envelope }) {
    await sql`
      insert into ledger_entries (entry_id, account_id, amount, currency, source_event_id)
      values (${`refs-${payload.id}`}, 'ACC-1', '1.00', 'EUR', ${`refs-${payload.id}`})
    `;
    if (failing.has(envelope.idempotencyKey))
      throw new RetryableError('NOT_YET', 'fails on the first delivery');
    return payload.returned ? { resultRef: payload.returned } : undefined;
  },
});

const refsEnvelope = (payload: { id: string; returned?: string }) =>
  envelopeFactory({ messageType: 'Refs', idempotencyKey: `refs:${payload.id}`, payload });

describe.each(['per-message', 'per-batch'] as const)(
  'Declared result references, commitMode %s',
  (commitMode) => {
    it('stores the declared reference with the claim, a returned one instead, and completes a redelivery after a failure', async () => {
      // Prepare: a plain message, one whose handler returns another reference, one that fails on its first delivery.
      const worker = exampleWorker(db.sql, {
        commitMode,
        handlers: [refs],
        failInvocationOnFullBatchFailure: false,
      });
      const [plain, returned, retried] = [randomUUID(), randomUUID(), randomUUID()];
      const envelopes = [
        refsEnvelope({ id: plain }),
        refsEnvelope({ id: returned, returned: `other/${returned}` }),
        refsEnvelope({ id: retried }),
      ];
      failing.add(`refs:${retried}`);
      const records = envelopes.map((envelope) => sqsRecordFactory(envelope));

      // Act: the batch, then the failed record again (its redelivery).
      const first = await worker(sqsEvent(records), lambdaContext());
      const firstRows = await db.sql`
      select idempotency_key, status, result_ref, receive_count from worker_inbox
      where idempotency_key = ${`refs:${retried}`}
    `;
      failing.delete(`refs:${retried}`);
      const again = await worker(sqsEvent([records[2] as never]), lambdaContext());

      // Assess
      expect(first.batchItemFailures.map((failure) => failure.itemIdentifier)).toEqual([
        records[2]?.messageId,
      ]);
      expect(firstRows).toEqual([
        {
          idempotency_key: `refs:${retried}`,
          status: 'FAILED_RETRYABLE',
          result_ref: null,
          receive_count: 1,
        },
      ]);
      expect(again.batchItemFailures).toEqual([]);
      const rows = await db.sql<{ key: string; status: string; result_ref: string; completed: boolean }[]>`
      select idempotency_key as key, status, result_ref, completed_at is not null as completed from worker_inbox
      where idempotency_key = any(${envelopes.map((envelope) => envelope.idempotencyKey)}::text[])
      order by idempotency_key
    `;
      expect(rows).toEqual(
        [
          { key: `refs:${plain}`, status: 'COMPLETED', result_ref: `refs/${plain}`, completed: true },
          { key: `refs:${returned}`, status: 'COMPLETED', result_ref: `other/${returned}`, completed: true },
          { key: `refs:${retried}`, status: 'COMPLETED', result_ref: `refs/${retried}`, completed: true },
        ].sort((a, b) => a.key.localeCompare(b.key)),
      );
      const ledger = await db.sql`
      select entry_id from ledger_entries where entry_id = any(${[plain, returned, retried].map((id) => `refs-${id}`)}::text[])
    `;
      expect(ledger).toHaveLength(3);
    });
  },
);
