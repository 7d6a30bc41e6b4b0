import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTestDatabase } from '../support/database.ts';
import { runEntry } from '../support/run-entry.ts';
import { createQueues, depth, paymentEnvelope, seedInbox, sendAll, startOpsSqs } from './ops-fixture.ts';

// `dlq redrive --canary` and `quarantine release --all` through the real CLI entry: their flag rules, and one run each
// against PostgreSQL and fauxqs.
const db = await createTestDatabase();
const { sqs, endpoint } = await startOpsSqs();
const cli = (args: string[], env: Record<string, string> = {}) => runEntry('bin/sqs-worker.js', args, env);

describe('CLI: dlq redrive --canary', () => {
  it('refuses --canary with --dry-run, a canary flag without --canary, and no --max (exit 2)', async () => {
    // Prepare
    const env = { WORKER_DLQ_URL: 'http://x/q-dlq', WORKER_QUEUE_URL: 'http://x/q', SQS_ENDPOINT: endpoint };

    // Act
    const [dryRun, watchAlone, noMax] = await Promise.all([
      cli(['dlq', 'redrive', '--canary', '2', '--dry-run'], env),
      cli(['dlq', 'redrive', '--max', '2', '--watch'], env),
      cli(['dlq', 'redrive'], env),
    ]);

    // Assess
    expect([dryRun.code, watchAlone.code, noMax.code]).toEqual([2, 2, 2]);
    expect(dryRun.stderr).toContain('it takes neither --dry-run');
    expect(watchAlone.stderr).toContain('--watch belong(s) to a canary redrive: add --canary <n>');
    expect(noMax.stderr).toContain('dlq redrive needs --max <n>');
  });

  it('stops on the first round when no worker processes the canaries, leaving the rest in the DLQ (exit 1)', async () => {
    // Prepare: no worker consumes the source queue, so the canary times out
    const { queueUrl, dlqUrl } = await createQueues(sqs);
    const envelopes = [0, 1, 2].map((i) => paymentEnvelope(1000 + i));
    for (const envelope of envelopes) {
      await seedInbox(db.sql, envelope, { status: 'FAILED_TERMINAL', failureCode: 'ACCOUNT_CLOSED' });
    }
    await sendAll(sqs, dlqUrl, envelopes);
    const env = {
      DATABASE_URL: db.url,
      WORKER_DLQ_URL: dlqUrl,
      WORKER_QUEUE_URL: queueUrl,
      SQS_ENDPOINT: endpoint,
    };

    // Act
    const run = await cli(
      ['dlq', 'redrive', '--canary', '1', '--watch', '--round-timeout', '1s', '--json'],
      env,
    );

    // Assess
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({
      moved: 1,
      failed: 1,
      stoppedBy: 'failures',
      rounds: [{ outcomes: [{ outcome: 'timed out', status: 'FAILED_RETRYABLE', attempts: 0 }] }],
    });
    expect(await depth(sqs, dlqUrl)).toEqual({ visible: 2, inFlight: 0 });
    expect(await depth(sqs, queueUrl)).toEqual({ visible: 1, inFlight: 0 });
  });
});

describe('CLI: quarantine release --all', () => {
  it('refuses without --yes off a terminal, an id with --all, and --reason without --all (exit 2)', async () => {
    // Prepare
    const env = { DATABASE_URL: db.url, WORKER_QUEUE_URL: 'http://x/q', SQS_ENDPOINT: endpoint };
    const envelope = paymentEnvelope(1100);
    const body = JSON.stringify(envelope);
    await db.sql`
      insert into worker_quarantine (consumer, body_hash, body, idempotency_key, message_type, reason_code, reason_message)
      values ('cli-bulk', ${createHash('sha256').update(body).digest('hex')}, ${body}, ${envelope.idempotencyKey},
        'PaymentCaptured', 'ACCOUNT_CLOSED', 'seeded')
    `;

    // Act
    const [unconfirmed, both, misplaced, none, badTime] = await Promise.all([
      cli(['quarantine', 'release', '--all', '--consumer', 'cli-bulk'], env),
      cli(['quarantine', 'release', '42', '--all'], env),
      cli(['quarantine', 'release', '42', '--reason', 'ACCOUNT_CLOSED'], env),
      cli(['quarantine', 'release'], env),
      cli(['quarantine', 'list', '--since', 'yesterday'], env),
    ]);

    // Assess
    expect([unconfirmed.code, both.code, misplaced.code, none.code, badTime.code]).toEqual([2, 2, 2, 2, 2]);
    expect(unconfirmed.stderr).toContain(
      'would re-send 1 quarantine entry of cli-bulk to http://x/q: pass --yes to confirm',
    );
    expect(both.stderr).toContain('takes an <id> or --all with filters, not both');
    expect(misplaced.stderr).toContain('--reason select(s) entries for "quarantine release --all"');
    expect(none.stderr).toContain('quarantine release needs the <id> of an entry');
    expect(badTime.stderr).toContain('--since must be an ISO 8601 time');
    const [left] =
      await db.sql`select count(*)::int as n from worker_quarantine where consumer = 'cli-bulk' and released_at is null`;
    expect(left?.n).toBe(1);
  });
});
