import { describe, expect, it } from 'vitest';
import type { HealthFigures } from '../../../../lambda/health/collect-health.ts';
import { UsageError } from '../../../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../../../tools/ops/memory-output.ts';
import { health } from '../../../../tools/ops/stores/postgres/health.ts';
import { createTestDatabase } from '../../../support/database.ts';
import { runEntry } from '../../../support/run-entry.ts';
import { paymentEnvelope, seedInbox } from '../../ops-fixture.ts';

const db = await createTestDatabase();
const MINUTE = 60_000;

describe('Function: health()', () => {
  it('prints the figures as a table and as one JSON document, never a body', async () => {
    // Prepare: a retryable row seen 10 minutes ago and an open quarantine entry.
    await seedInbox(db.sql, paymentEnvelope(1), {
      status: 'FAILED_RETRYABLE',
      failureCode: 'LOCK_TIMEOUT',
      firstSeenAt: new Date(Date.now() - 10 * MINUTE),
    });
    await db.sql`
      insert into worker_quarantine (consumer, body_hash, body, reason_code, reason_message, first_quarantined_at)
      values ('case-worker', ${'b'.repeat(64)}, '{"accountId":"ACC-SECRET"}', 'INVALID_ENVELOPE', 'not json', now() - interval '20 minutes')
    `;
    const table = createMemoryOutput();
    const json = createMemoryOutput({ json: true });

    // Act
    await health({ sql: db.sql, out: table }, { consumer: 'case-worker' });
    const result = await health({ sql: db.sql, out: json }, { consumer: 'case-worker' });

    // Assess
    expect(result.inbox.byStatus.FAILED_RETRYABLE).toBe(1);
    expect(result.inbox.oldestRetryableAgeMs).toBeGreaterThanOrEqual(10 * MINUTE - 1000);
    expect(result.quarantine.open).toBe(1);
    expect(result.quarantine.oldestOpenAgeMs).toBeGreaterThanOrEqual(20 * MINUTE - 1000);
    expect(table.stdout()).toMatch(/open quarantine entries\s*│\s*1\s*│\s*1200\.\d s/);
    expect(table.stdout()).toContain('inbox FAILED_RETRYABLE');
    expect(json.lastJson<HealthFigures>()).toMatchObject({
      consumer: 'case-worker',
      quarantine: { open: 1 },
      inbox: { byStatus: { FAILED_RETRYABLE: 1, PROCESSING: 0 } },
      outbox: { pending: 0, oldestPendingAgeMs: null },
      locks: { waiting: 0 },
      deadlocks: 0,
    });
    expect(table.stdout() + json.stdout()).not.toContain('ACC-SECRET');
  });

  it('refuses a long-transaction threshold above one hour (exit 2)', async () => {
    // Act
    const error = await health(
      { sql: db.sql, out: createMemoryOutput() },
      { consumer: 'case-worker', longTransactionMs: 7_200_000 },
    ).catch((caught: unknown) => caught);

    // Assess
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toContain('--long-transaction must be at most 1h (given 7200s)');
  });
});

describe('CLI: sqs-worker health', () => {
  it('prints the figures with --json and exits 0', async () => {
    // Act
    const result = await runEntry('bin/sqs-worker.js', ['health', '--json', '--long-transaction', '5s'], {
      DATABASE_URL: db.url,
    });

    // Assess
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ consumer: 'case-worker', quarantine: { open: 1 } });
  });
});
