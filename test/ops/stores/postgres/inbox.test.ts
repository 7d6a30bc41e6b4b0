import { describe, expect, it } from 'vitest';
import { OperationError, UsageError } from '../../../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../../../tools/ops/memory-output.ts';
import { inboxPurge } from '../../../../tools/ops/stores/postgres/inbox-purge.ts';
import { inboxShow } from '../../../../tools/ops/stores/postgres/inbox-show.ts';
import { inboxStats } from '../../../../tools/ops/stores/postgres/inbox-stats.ts';
import { createTestDatabase } from '../../../support/database.ts';
import { createQueues, fastClock, paymentEnvelope, seedInbox, startOpsSqs } from '../../ops-fixture.ts';

const db = await createTestDatabase();
const { sqs } = await startOpsSqs();
const DAY = 86_400_000;

describe('Function: inboxShow()', () => {
  it('shows the inbox row, its quarantine entry and operator actions of a key', async () => {
    // Prepare
    const envelope = paymentEnvelope(1);
    const key = envelope.idempotencyKey;
    await seedInbox(db.sql, envelope, {
      status: 'FAILED_TERMINAL',
      failureCode: 'ACCOUNT_CLOSED',
      attempts: 3,
    });
    await db.sql`
      insert into worker_quarantine (consumer, body_hash, body, idempotency_key, message_type, reason_code, reason_message)
      values ('case-worker', ${'a'.repeat(64)}, ${JSON.stringify(envelope)}, ${key}, 'PaymentCaptured', 'ACCOUNT_CLOSED', 'account closed')
    `;
    await db.sql`insert into ops_audit (action, outcome, consumer, idempotency_key) values ('dlq_redrive', 'DONE', 'case-worker', ${key})`;
    const out = createMemoryOutput();

    // Act
    const result = await inboxShow({ sql: db.sql, out }, { consumer: 'case-worker', idempotencyKey: key });

    // Assess
    expect(result.inbox).toMatchObject({
      status: 'FAILED_TERMINAL',
      failureCode: 'ACCOUNT_CLOSED',
      attempts: 3,
    });
    expect(result.quarantine).toEqual([
      expect.objectContaining({ reasonCode: 'ACCOUNT_CLOSED', releasedAt: null }),
    ]);
    expect(result.audit).toEqual([expect.objectContaining({ action: 'dlq_redrive' })]);
    expect(out.stdout()).toContain('FAILED_TERMINAL');
    expect(out.stdout()).not.toContain('ACC-1'); // the quarantined body is not shown here
  });

  it('fails with exit code 1 for an unknown key', async () => {
    // Act
    const error = await inboxShow(
      { sql: db.sql, out: createMemoryOutput() },
      { consumer: 'case-worker', idempotencyKey: 'nope' },
    ).catch((caught: unknown) => caught);

    // Assess
    expect(error).toBeInstanceOf(OperationError);
    expect((error as OperationError).exitCode).toBe(1);
    expect((error as Error).message).toContain('"nope"');
  });
});

describe('Function: inboxStats()', () => {
  it('counts by status and failure code, finds the oldest FAILED_RETRYABLE and last-hour completions', async () => {
    // Prepare (consumer of its own, so other tests' rows do not count)
    const now = new Date('2026-07-06T12:00:00Z');
    const consumer = 'stats-worker';
    await seedInbox(db.sql, paymentEnvelope(10), {
      consumer,
      status: 'COMPLETED',
      completedAt: new Date(now.getTime() - 10 * 60_000),
    });
    await seedInbox(db.sql, paymentEnvelope(11), {
      consumer,
      status: 'COMPLETED',
      completedAt: new Date(now.getTime() - 2 * 3_600_000),
    });
    const oldest = paymentEnvelope(12);
    await seedInbox(db.sql, oldest, {
      consumer,
      status: 'FAILED_RETRYABLE',
      failureCode: 'DB_TIMEOUT',
      firstSeenAt: new Date(now.getTime() - 3_600_000),
    });
    await seedInbox(db.sql, paymentEnvelope(13), {
      consumer,
      status: 'FAILED_RETRYABLE',
      failureCode: 'DB_TIMEOUT',
      firstSeenAt: new Date(now.getTime() - 60_000),
    });
    await seedInbox(db.sql, paymentEnvelope(14), {
      consumer,
      status: 'FAILED_TERMINAL',
      failureCode: 'ACCOUNT_CLOSED',
    });
    const out = createMemoryOutput({ json: true });

    // Act
    const result = await inboxStats({ sql: db.sql, out, clock: fastClock(now) }, { consumer });

    // Assess
    expect(result.byStatus).toEqual({
      RECEIVED: 0,
      PROCESSING: 0,
      COMPLETED: 2,
      FAILED_RETRYABLE: 2,
      FAILED_TERMINAL: 1,
    });
    expect(result.failures).toEqual([
      { status: 'FAILED_RETRYABLE', failureCode: 'DB_TIMEOUT', count: 2 },
      { status: 'FAILED_TERMINAL', failureCode: 'ACCOUNT_CLOSED', count: 1 },
    ]);
    expect(result.oldestRetryable).toMatchObject({ idempotencyKey: oldest.idempotencyKey, ageSeconds: 3600 });
    expect(result.completedLastHour).toBe(1);
    expect(out.lastJson<{ completedLastHour: number }>().completedLastHour).toBe(1);
  });
});

describe('Function: inboxPurge()', () => {
  it('deletes old COMPLETED rows in batches and keeps the rest', async () => {
    // Prepare
    const now = new Date();
    const consumer = 'purge-worker';
    const { queueUrl, dlqUrl } = await createQueues(sqs, {
      sourceRetention: 4 * 86_400,
      dlqRetention: 14 * 86_400,
    });
    const old = new Date(now.getTime() - 30 * DAY);
    for (let i = 0; i < 5; i += 1)
      await seedInbox(db.sql, paymentEnvelope(20 + i), { consumer, status: 'COMPLETED', firstSeenAt: old });
    await seedInbox(db.sql, paymentEnvelope(30), {
      consumer,
      status: 'COMPLETED',
      firstSeenAt: new Date(now.getTime() - 5 * DAY),
    });
    await seedInbox(db.sql, paymentEnvelope(31), {
      consumer,
      status: 'FAILED_TERMINAL',
      failureCode: 'X',
      firstSeenAt: old,
    });
    const out = createMemoryOutput();

    // Act
    const result = await inboxPurge(
      { sql: db.sql, out, clock: fastClock(now), sqs },
      { consumer, olderThanSeconds: 20 * 86_400, queueUrl, dlqUrl, batchSize: 2 },
    );

    // Assess
    expect(result).toMatchObject({
      deleted: 5,
      batches: 3,
      sourceRetentionSeconds: 4 * 86_400,
      dlqRetentionSeconds: 14 * 86_400,
    });
    const rest = await db.sql`select status from worker_inbox where consumer = ${consumer} order by status`;
    expect(rest.map((row) => row.status)).toEqual(['COMPLETED', 'FAILED_TERMINAL']);
    const [audit] =
      await db.sql`select detail from ops_audit where action = 'inbox_purge' and consumer = ${consumer}`;
    expect(audit?.detail).toMatchObject({ deleted: 5, batches: 3 });
  });

  it('refuses a window shorter than source + DLQ retention, naming the values and the fix', async () => {
    // Prepare
    const consumer = 'purge-refused';
    const { queueUrl, dlqUrl } = await createQueues(sqs, {
      sourceRetention: 4 * 86_400,
      dlqRetention: 14 * 86_400,
    });
    await seedInbox(db.sql, paymentEnvelope(40), {
      consumer,
      status: 'COMPLETED',
      firstSeenAt: new Date(Date.now() - 30 * DAY),
    });

    // Act
    const error = await inboxPurge(
      { sql: db.sql, out: createMemoryOutput(), clock: fastClock(), sqs },
      { consumer, olderThanSeconds: 7 * 86_400, queueUrl, dlqUrl },
    ).catch((caught: unknown) => caught);

    // Assess
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).exitCode).toBe(2);
    expect((error as Error).message).toContain('source retention 4d + DLQ retention 14d = 18d');
    expect((error as Error).message).toContain('Use --older-than 18d or more');
    const [row] = await db.sql`select count(*)::int as n from worker_inbox where consumer = ${consumer}`;
    expect(row?.n).toBe(1);
  });

  it('uses retentions given as flags and counts only on --dry-run', async () => {
    // Prepare
    const consumer = 'purge-dry';
    await seedInbox(db.sql, paymentEnvelope(50), {
      consumer,
      status: 'COMPLETED',
      firstSeenAt: new Date(Date.now() - 3 * DAY),
    });

    // Act
    const result = await inboxPurge(
      { sql: db.sql, out: createMemoryOutput(), clock: fastClock() },
      {
        consumer,
        olderThanSeconds: 2 * 86_400,
        sourceRetentionSeconds: 86_400,
        dlqRetentionSeconds: 86_400,
        dryRun: true,
      },
    );

    // Assess
    expect(result).toMatchObject({ dryRun: true, deleted: 1 });
    const [row] = await db.sql`select count(*)::int as n from worker_inbox where consumer = ${consumer}`;
    expect(row?.n).toBe(1);
  });
});
