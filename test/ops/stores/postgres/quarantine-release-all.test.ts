import { createHash } from 'node:crypto';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import type { Envelope } from '../../../../lambda/worker/envelope.ts';
import { systemClock } from '../../../../tools/ops/clock.ts';
import { FailedChecksError, OperationError, UsageError } from '../../../../tools/ops/errors.ts';
import { createMemoryOutput } from '../../../../tools/ops/memory-output.ts';
import { quarantineReleaseAll } from '../../../../tools/ops/quarantine-release-all.ts';
import { postgresOpsStore } from '../../../../tools/ops/stores/postgres/index.ts';
import { createTestDatabase } from '../../../support/database.ts';
import { createQueues, depth, paymentEnvelope, seedInbox, startOpsSqs } from '../../ops-fixture.ts';

const db = await createTestDatabase();
const { sqs } = await startOpsSqs();
const store = postgresOpsStore({ sql: () => db.sql });
const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3_600_000);

let consumers = 0;

/**
 * A consumer of its own with four quarantined messages, oldest first: two closed-account payments (3 h and 2 h ago), a
 * deadline request of a case whose later stage change completed after it (1 h ago: its guard refuses a release), and
 * an INVALID_STAGE deadline request (10 min ago); plus another consumer's payment, never touched.
 */
async function mixedQuarantine() {
  consumers += 1;
  const consumer = `bulk-${process.pid}-${consumers}`;
  const caseId = `C-BULK-${process.pid}-${consumers}`;
  const event = (index: number, fields: Partial<Envelope>) =>
    paymentEnvelope(900 + consumers * 10 + index, fields);
  const payments = [event(1, {}), event(2, {})];
  const guarded = event(3, {
    messageType: 'CaseDeadlineRequested',
    aggregateType: 'case',
    aggregateId: caseId,
    idempotencyKey: `case:${caseId}:deadline:1`,
  });
  const invalid = event(4, {
    messageType: 'CaseDeadlineRequested',
    idempotencyKey: `case:${caseId}:deadline:2`,
  });
  const seeded: Array<[Envelope, string, number]> = [
    [payments[0] as Envelope, 'ACCOUNT_CLOSED', 3],
    [payments[1] as Envelope, 'ACCOUNT_CLOSED', 2],
    [guarded, 'CASE_NOT_FOUND', 1],
    [invalid, 'INVALID_STAGE', 1 / 6],
  ];
  const ids: string[] = [];
  for (const [envelope, reasonCode, age] of seeded) {
    await seedInbox(db.sql, envelope, {
      status: 'FAILED_TERMINAL',
      failureCode: reasonCode,
      attempts: 5,
      firstSeenAt: hoursAgo(age),
      consumer,
    });
    ids.push(await quarantineAt(consumer, envelope, reasonCode, hoursAgo(age)));
  }
  const stage = event(5, {
    messageType: 'CaseStageChanged',
    aggregateType: 'case',
    aggregateId: caseId,
    idempotencyKey: `case:${caseId}:stage:v2`,
  });
  await seedInbox(db.sql, stage, { status: 'COMPLETED', firstSeenAt: hoursAgo(0.5), consumer });
  const otherId = await quarantineAt('other-worker', event(6, {}), 'ACCOUNT_CLOSED', hoursAgo(2));
  const { queueUrl } = await createQueues(sqs);
  return { consumer, ids, otherId, queueUrl, keys: seeded.map(([envelope]) => envelope.idempotencyKey) };
}

/** A quarantine row as the worker writes it, last quarantined at `at`. */
async function quarantineAt(
  consumer: string,
  envelope: Envelope,
  reasonCode: string,
  at: Date,
): Promise<string> {
  const body = JSON.stringify(envelope);
  const [row] = await db.sql<{ id: string }[]>`
    insert into worker_quarantine (
      consumer, body_hash, body, sqs_message_id, idempotency_key, message_type, reason_code, reason_message,
      sqs_attributes, message_attributes, first_quarantined_at, last_quarantined_at
    ) values (
      ${consumer}, ${createHash('sha256').update(body).digest('hex')}, ${body}, ${`m-${envelope.messageId}`},
      ${envelope.idempotencyKey}, ${envelope.messageType}, ${reasonCode}, 'seeded', ${db.sql.json({})},
      ${db.sql.json({})}, ${at}, ${at}
    ) returning quarantine_id::text as id
  `;
  return (row as { id: string }).id;
}

const released = (ids: readonly string[]) => db.sql<{ id: string; released: boolean }[]>`
  select quarantine_id::text as id, released_at is not null as released from worker_quarantine
  where quarantine_id in ${db.sql(ids.map(Number))} order by quarantine_id
`;
const audited = (ids: readonly string[]) => db.sql<{ id: string; outcome: string }[]>`
  select detail->>'quarantineId' as id, outcome from ops_audit
  where action = 'quarantine_release' and detail->>'quarantineId' in ${db.sql(ids)} order by id
`;

describe('Function: quarantineReleaseAll() on PostgreSQL', () => {
  it('lists on --dry-run what would be released and what each guard says, sending nothing', async () => {
    // Prepare
    const fixture = await mixedQuarantine();
    const out = createMemoryOutput();

    // Act
    const result = await quarantineReleaseAll(
      { store, sqs, out, clock: systemClock },
      { consumer: fixture.consumer, queueUrl: fixture.queueUrl, limit: 100, dryRun: true },
    );

    // Assess: oldest first; the guarded one would be skipped
    expect(result.items.map((i) => [i.quarantineId, i.result, i.skipCode])).toEqual([
      [fixture.ids[0], 'would release', null],
      [fixture.ids[1], 'would release', null],
      [fixture.ids[2], 'would skip', 'NEWER_COMPLETED_EVENTS'],
      [fixture.ids[3], 'would release', null],
    ]);
    expect(out.stdout()).toContain('Dry run: 3 of 4 matching entries would be released');
    expect(out.stdout()).not.toContain('ACC-1'); // a payload value
    expect(await depth(sqs, fixture.queueUrl)).toEqual({ visible: 0, inFlight: 0 });
    expect((await released(fixture.ids)).filter((row) => row.released)).toEqual([]);
    expect(await audited(fixture.ids)).toEqual([]);
  });

  it('releases the entries in the time window, skips the one its guard refuses and reports it (exit 1)', async () => {
    // Prepare
    const fixture = await mixedQuarantine();
    const out = createMemoryOutput();

    // Act: since 4 h ago, before 20 min ago: the INVALID_STAGE entry (10 min ago) is left out
    const error = await quarantineReleaseAll(
      { store, sqs, out, clock: systemClock },
      {
        consumer: fixture.consumer,
        queueUrl: fixture.queueUrl,
        since: hoursAgo(4),
        before: hoursAgo(1 / 3),
        limit: 100,
        yes: true,
        actor: 'test-operator',
      },
    ).catch((caught: unknown) => caught);

    // Assess
    expect(error).toBeInstanceOf(FailedChecksError);
    expect(out.stdout()).toContain('Released 2 of 3 matching entries');
    expect(out.stdout()).toMatch(/skipped +│ NEWER_COMPLETED_EVENTS/);
    expect(await released([...fixture.ids, fixture.otherId])).toEqual([
      { id: fixture.ids[0], released: true },
      { id: fixture.ids[1], released: true },
      { id: fixture.ids[2], released: false },
      { id: fixture.ids[3], released: false },
      { id: fixture.otherId, released: false },
    ]);
    expect(await audited(fixture.ids)).toEqual(
      [fixture.ids[0], fixture.ids[1]].sort().map((id) => ({ id, outcome: 'DONE' })),
    );
    const received = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: fixture.queueUrl, MaxNumberOfMessages: 10 }),
    );
    expect((received.Messages ?? []).map((m) => JSON.parse(m.Body ?? '{}').idempotencyKey).sort()).toEqual(
      fixture.keys.slice(0, 2).sort(),
    );
    const inbox = await db.sql`
      select idempotency_key as key, status from worker_inbox
      where consumer = ${fixture.consumer} and idempotency_key in ${db.sql(fixture.keys)} order by key
    `;
    expect(Object.fromEntries(inbox.map((row) => [row.key, row.status]))).toEqual({
      [fixture.keys[0] as string]: 'FAILED_RETRYABLE',
      [fixture.keys[1] as string]: 'FAILED_RETRYABLE',
      [fixture.keys[2] as string]: 'FAILED_TERMINAL',
      [fixture.keys[3] as string]: 'FAILED_TERMINAL',
    });
  });

  it('takes the oldest --limit entries of a reason, and asks before sending', async () => {
    // Prepare
    const fixture = await mixedQuarantine();
    const options = {
      consumer: fixture.consumer,
      queueUrl: fixture.queueUrl,
      reasonCode: 'ACCOUNT_CLOSED',
      limit: 1,
    };
    const deps = { store, sqs, out: createMemoryOutput(), clock: systemClock };

    // Act: no terminal to ask on; then the operator says no; then yes
    const unasked = await quarantineReleaseAll(deps, options).catch((caught: unknown) => caught);
    const declined = await quarantineReleaseAll({ ...deps, confirm: async () => false }, options).catch(
      (caught: unknown) => caught,
    );
    const questions: string[] = [];
    const result = await quarantineReleaseAll(
      {
        ...deps,
        confirm: async (question) => {
          questions.push(question);
          return true;
        },
      },
      options,
    );

    // Assess
    expect(unasked).toBeInstanceOf(UsageError);
    expect((unasked as Error).message).toContain('pass --yes to confirm, or --dry-run');
    expect(declined).toBeInstanceOf(OperationError);
    expect(questions).toEqual([`Release 1 quarantine entry of ${fixture.consumer} to ${fixture.queueUrl}?`]);
    expect(result).toMatchObject({ matched: 1, released: 1, skipped: 0 });
    expect(result.items.map((i) => i.quarantineId)).toEqual([fixture.ids[0]]);
    expect(await depth(sqs, fixture.queueUrl)).toEqual({ visible: 1, inFlight: 0 });
    expect(deps.out.stdout()).toContain('--limit 1 reached: more entries may match');
  });
});
